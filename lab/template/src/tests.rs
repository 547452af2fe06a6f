use super::*;

/// The repository's own template, as deployed.
fn deployed() -> Template {
    Template::parse(include_str!("../../../template.yaml")).expect("template.yaml parses")
}

#[test]
fn the_deployed_templates_settings_at_its_defaults() {
    let template = deployed();
    assert_eq!(
        template.parameter_default("FunctionMemoryMb").as_deref(),
        Some("256")
    );
    assert_eq!(
        template.parameter_default("AllowedOrigins").as_deref(),
        Some("")
    );
    assert_eq!(template.parameter_default("NoSuchParameter"), None);
    assert_eq!(
        template.allowed_values("OrderRate"),
        ["100", "250", "500", "1000", "2500", "5000", "10000"]
    );
    assert_eq!(template.order_rate().as_deref(), Some("1000"));
    assert_eq!(template.top_order_rate().as_deref(), Some("10000"));
    for function in [
        "PetsFunction",
        "StoreFunction",
        "EventsFunction",
        "WebhooksFunction",
    ] {
        // Globals' MemorySize and Tracing, through their parameters.
        assert_eq!(template.memory_mb(function), Some(256), "{function}");
        assert_eq!(template.tracing(function).as_deref(), Some("PassThrough"));
        assert_eq!(template.system_log_level(function).as_deref(), Some("WARN"));
    }
    assert_eq!(
        template.stage_throttle(),
        Some(StageThrottle {
            rate: 1000.0,
            burst: 2000.0
        })
    );
    let format = template.access_log_format().expect("an access log format");
    // The folded block, its lines joined by single spaces.
    assert!(
        format.starts_with(r#"{"requestId":"$context.requestId","ip":"#),
        "{format}"
    );
    assert!(format.contains(r#"sourceIp", "request":"#), "{format}");
    assert!(format.ends_with(r#""error":"$context.integrationErrorMessage"}"#));
    assert_eq!(template.stream_batch("EventsFunction"), Some(100));
    assert_eq!(template.stream_batch("PetsFunction"), None);
    assert_eq!(template.queue_batch("WebhookEventsQueue"), Some(10));
    // Set by OrderRate's Capacity row: 10 at the default.
    assert_eq!(template.queue_batch("WebhookDeliveriesQueue"), Some(10));
    assert_eq!(template.queue_batch("EventsDeadLetterQueue"), None);
}

#[test]
fn the_deployed_capacity_rows_and_variables() {
    let template = deployed();
    let row = template.capacity("1000").expect("OrderRate 1000's row");
    assert_eq!(
        row,
        Capacity {
            order_list_shards: 4,
            pet_list_shards: 1,
            delivery_shards: 16,
            delivery_batch_size: 10,
            delivery_batch_window: 0,
            throttle_rate: 1000,
            throttle_burst: 2000,
            alarm_requests_per_minute: 48000,
        }
    );
    let top = template.capacity("10000").expect("the top rate's row");
    assert_eq!((top.order_list_shards, top.delivery_batch_size), (32, 100));
    assert_eq!(
        template.capacity("none").map(|row| row.delivery_shards),
        Some(0)
    );
    assert_eq!(template.capacity("42"), None);
    // Every allowed rate has its row.
    for rate in template.allowed_values("OrderRate") {
        assert!(
            template.capacity(&rate).is_some(),
            "no Capacity row for {rate}"
        );
    }
    assert_eq!(
        template.own_variables("EventsFunction"),
        Some(vec![
            "EVENT_BUS_NAME".to_string(),
            "WEBHOOK_QUEUE_URL".into(),
            "ORIGIN_SECRET".into()
        ])
    );
    assert_eq!(
        template.own_variables("WebhooksFunction"),
        Some(vec![
            "WEBHOOK_QUEUE_URL".to_string(),
            "WEBHOOK_SECRETS_KEY".into()
        ])
    );
    assert_eq!(template.own_variables("PetsFunction"), Some(Vec::new()));
    assert_eq!(template.own_variables("NoSuchFunction"), None);
}

/// A template of every shape the reader resolves, and some it does not.
const SMALL: &str = r#"
Parameters:
  Memory:
    Type: Number
    Default: 512
    AllowedValues: [128, 512]
  OrderRate:
    Type: String
    Default: "100"
    AllowedValues: ["100", "2500", none]
  Tracing:
    Type: String
    Default: Active
Mappings:
  Capacity:
    "100": { OrderListShards: 1, PetListShards: 1, DeliveryShards: 2, DeliveryBatchSize: 7, DeliveryBatchWindow: 0, ThrottleRate: 100, ThrottleBurst: 200, AlarmRequestsPerMinute: 4800 }
    2500: { OrderListShards: 8, PetListShards: 1, DeliveryShards: 32, DeliveryBatchSize: 25, DeliveryBatchWindow: 1, ThrottleRate: 2500, ThrottleBurst: 5000, AlarmRequestsPerMinute: 120000 }
Conditions:
  IsProd: !Equals [!Ref OrderRate, "2500"]
Globals:
  Function:
    MemorySize: !Ref Memory
    Tracing: !If [IsProd, Active, !Ref Tracing]
    LoggingConfig:
      SystemLogLevel: INFO
Resources:
  Api:
    Type: AWS::Serverless::HttpApi
    Properties:
      DefaultRouteSettings:
        ThrottlingRateLimit: !FindInMap [Capacity, !Ref OrderRate, ThrottleRate]
        ThrottlingBurstLimit: 50
      AccessLogSettings:
        DestinationArn: !GetAtt Logs.Arn
        Format: >-
          {"requestId":"$context.requestId",
          "status":"$context.status"}
  Small:
    Type: AWS::Serverless::Function
    Properties:
      MemorySize: 128
      LoggingConfig:
        SystemLogLevel: WARN
      Environment:
        Variables:
          # A comment is no variable.
          QUEUE_URL: !Ref Deliveries
          NAME: !Sub "${AWS::StackName}-small"
      Events:
        Stream:
          Type: DynamoDB
          Properties:
            Stream: !GetAtt Table.StreamArn
        Fast:
          Type: SQS
          Properties:
            Queue: !GetAtt Deliveries.Arn
            BatchSize: !FindInMap [Capacity, !Ref OrderRate, DeliveryBatchSize]
        Slow:
          Type: SQS
          Properties:
            Queue: !GetAtt [Events, Arn]
        Odd:
          Type: SQS
          Properties:
            Queue: !GetAtt Odd.Arn
            BatchSize: !If [IsProd, 1, 2]
  Other:
    Type: AWS::Serverless::Function
    Properties:
      Handler: bootstrap
"#;

#[test]
fn settings_resolve_through_refs_and_maps_at_the_defaults() {
    let template = Template::parse(SMALL).expect("parses");
    assert_eq!(template.memory_mb("Small"), Some(128), "its own");
    assert_eq!(template.memory_mb("Other"), Some(512), "the Globals' !Ref");
    assert_eq!(
        template.memory_mb("Missing"),
        Some(512),
        "the Globals' still"
    );
    // An !If is not evaluated.
    assert_eq!(template.tracing("Other"), None);
    assert_eq!(template.system_log_level("Small").as_deref(), Some("WARN"));
    assert_eq!(template.system_log_level("Other").as_deref(), Some("INFO"));
    assert_eq!(
        template.stage_throttle(),
        Some(StageThrottle {
            rate: 100.0,
            burst: 50.0
        })
    );
    assert_eq!(
        template.access_log_format().as_deref(),
        Some(r#"{"requestId":"$context.requestId", "status":"$context.status"}"#)
    );
    assert_eq!(template.top_order_rate().as_deref(), Some("2500"));
    // An unquoted mapping key is the same key.
    let top = template.capacity("2500").expect("its row");
    assert_eq!(top.delivery_batch_window, 1);
}

#[test]
fn batches_are_the_mappings_or_lambdas_defaults() {
    let template = Template::parse(SMALL).expect("parses");
    assert_eq!(template.queue_batch("Deliveries"), Some(7));
    assert_eq!(template.queue_batch("Events"), Some(SQS_DEFAULT_BATCH));
    assert_eq!(template.queue_batch("Odd"), None, "an unresolved !If");
    assert_eq!(template.queue_batch("Missing"), None);
    assert_eq!(template.stream_batch("Small"), Some(STREAM_DEFAULT_BATCH));
    assert_eq!(template.stream_batch("Other"), None);
    assert_eq!(
        template.own_variables("Small"),
        Some(vec!["QUEUE_URL".to_string(), "NAME".into()])
    );
}

#[test]
fn an_empty_or_unreadable_template_has_no_settings() {
    let empty = Template::default();
    assert_eq!(empty.memory_mb("PetsFunction"), None);
    assert_eq!(empty.stage_throttle(), None);
    assert_eq!(empty.access_log_format(), None);
    assert_eq!(empty.queue_batch("WebhookDeliveriesQueue"), None);
    assert!(empty.allowed_values("OrderRate").is_empty());
    let nowhere = Path::new("/nonexistent-petstore-root");
    assert!(Template::read(nowhere).is_err_and(|e| e.contains("template.yaml")));
    assert!(Template::parse("Parameters: [unclosed").is_err());
}
