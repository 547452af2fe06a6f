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
use std::sync::LazyLock;

pub use super::docs_assets::DOCS_ASSETS;

/// The page, its files named by their content (`docs_assets`), so they may
/// be cached for a year while the page itself is fetched every time. The
/// paths are relative (`docs/assets/...` from `/docs`), so the page also
/// works under an API stage prefix.
static PAGE: LazyLock<String> = LazyLock::new(|| {
    format!(
        r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Pet Store API reference</title>
<link rel="icon" type="image/png" href="docs/assets/{favicon}">
<link rel="stylesheet" href="docs/assets/{css}">
</head>
<body>
<div id="swagger-ui"></div>
<script src="docs/assets/{bundle}"></script>
<script src="docs/assets/{script}"></script>
</body>
</html>
"#,
        favicon = served_name("favicon-32x32.png"),
        css = served_name("swagger-ui.css"),
        bundle = served_name("swagger-ui-bundle.js"),
        script = served_name("docs.js"),
    )
});

/// The name `file` is served under (its content's hash in it).
pub fn served_name(file: &str) -> &'static str {
    DOCS_ASSETS
        .iter()
        .find(|(name, _)| *name == file)
        .map_or("missing", |(_, served)| served)
}

/// Same origin only. Swagger UI's stylesheet draws its icons as `data:` SVG
/// images, hence `img-src data:`; everything else it needs is `'self'`.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

pub fn routes() -> Router<App> {
    Router::new().route("/docs", get(page))
}

async fn page() -> Response {
    let mut response = Html(PAGE.as_str()).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    // Fetched again every time: a cached page would name the files of an
    // earlier release, which the docs function no longer serves.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}
