//! `GET /docs`: the interactive API reference, public (but still metered) like
//! `GET /openapi.json`.
//!
//! This is only the page: a few hundred bytes of HTML. The renderer it loads
//! (Swagger UI, about 0.5 MB gzipped) would not fit in a function zip next to
//! the DynamoDB client, so its files are served by the `docs` function from
//! `/docs/assets/` (functions/docs; `petstore-local` serves them on the same
//! port). The Content-Security-Policy lets the page load and call nothing but
//! its own origin: no CDN, no inline script.

use crate::App;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use http::{header, HeaderValue};

/// The page. The paths are relative (`docs/assets/...` from `/docs`), so the
/// page also works under an API stage prefix.
const PAGE: &str = r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Pet Store API reference</title>
<link rel="icon" type="image/png" href="docs/assets/favicon-32x32.png">
<link rel="stylesheet" href="docs/assets/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="docs/assets/swagger-ui-bundle.js"></script>
<script src="docs/assets/docs.js"></script>
</body>
</html>
"#;

/// Same origin only. Swagger UI's stylesheet draws its icons as `data:` SVG
/// images, hence `img-src data:`; everything else it needs is `'self'`.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

pub fn routes() -> Router<App> {
    Router::new().route("/docs", get(page))
}

async fn page() -> Response {
    let mut response = Html(PAGE).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}
