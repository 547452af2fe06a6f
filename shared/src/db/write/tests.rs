use super::*;

#[tokio::test(start_paused = true)]
async fn every_operation_gets_the_same_bounded_number_of_attempts() {
    for pause in [Pause::None, Pause::Backoff] {
        let mut retry = Retry::new("test");
        let mut attempts = 1;
        while retry.again(pause).await.is_ok() {
            attempts += 1;
        }
        assert_eq!(attempts, MAX_ATTEMPTS);
        assert!(matches!(
            retry.again(pause).await,
            Err(DbError::Contended {
                operation: "test",
                attempts: MAX_ATTEMPTS
            })
        ));
    }
}

#[tokio::test(start_paused = true)]
async fn a_backoff_waits_longer_each_time_within_bounds() {
    let mut waits = Vec::new();
    let mut retry = Retry::new("test");
    loop {
        let started = tokio::time::Instant::now();
        if retry.again(Pause::Backoff).await.is_err() {
            break;
        }
        waits.push(started.elapsed());
    }
    assert_eq!(waits.len() as u32, MAX_ATTEMPTS - 1);
    assert!(waits[0] >= Duration::from_millis(2) && waits[0] <= Duration::from_millis(6));
    assert!(waits.iter().all(|w| *w <= Duration::from_millis(321)));
    assert!(waits.iter().sum::<Duration>() <= Duration::from_millis(700));
}
