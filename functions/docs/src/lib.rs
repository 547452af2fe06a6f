//! The `docs` function: the static files of the API reference page. The page
//! itself (`GET /docs`, metered like every operation) is served by the shared
//! wrapper (`petstore::http::docs`); its renderer, Swagger UI, weighs about
//! 0.5 MB gzipped and would push the `pets` zip past 3.0 MB, so it lives here,
//! in a function with no DynamoDB client, answering `/docs/assets/{file}`.
//!
//! These files are the same for everyone, hold no data and cost no DynamoDB
//! call, so they are not metered (metering needs the DynamoDB client, which is
//! what does not fit). Each is served under a name that changes with its
//! content (`swagger-ui.<hash>.css`, listed in `petstore::http::docs::DOCS_ASSETS`,
//! which the page links to), so browsers and CDNs keep it a year
//! (`immutable`): a new release's files have new names.
//!
//! The files are embedded at build time from `assets/`: Swagger UI's, copied
//! gzipped from the npm package pinned in package-lock.json by
//! `scripts/docs-assets.sh` (which `make test` runs with `--check`, so they
//! cannot drift from the pinned version), and `docs.js`, the page's own script.

use axum::extract::Path;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use http::{header, HeaderValue};
use petstore::http::docs::served_name;
use petstore::http::error::ApiError;

/// One embedded file.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    /// Stored gzipped: sent with `Content-Encoding: gzip`.
    gzipped: bool,
    bytes: &'static [u8],
}

const ASSETS: &[Asset] = &[
    Asset {
        name: "swagger-ui-bundle.js",
        content_type: "text/javascript; charset=utf-8",
        gzipped: true,
        bytes: include_bytes!("../assets/swagger-ui-bundle.js.gz"),
    },
    Asset {
        name: "swagger-ui.css",
        content_type: "text/css; charset=utf-8",
        gzipped: true,
        bytes: include_bytes!("../assets/swagger-ui.css.gz"),
    },
    Asset {
        name: "favicon-32x32.png",
        content_type: "image/png",
        gzipped: false,
        bytes: include_bytes!("../assets/favicon-32x32.png"),
    },
    Asset {
        name: "docs.js",
        content_type: "text/javascript; charset=utf-8",
        gzipped: false,
        bytes: include_bytes!("../assets/docs.js"),
    },
];

/// The names the files are served under in `/docs/assets/` (their content's
/// hash in each).
pub fn asset_names() -> impl Iterator<Item = &'static str> {
    ASSETS.iter().map(|asset| served_name(asset.name))
}

/// `GET /docs/assets/{file}`; any other method is the contract's 405. Every
/// answer, the 404 and 405 included, carries the wrapper's cache headers.
pub fn routes() -> Router {
    petstore::http::answer_headers(
        Router::new()
            .route("/docs/assets/{file}", get(asset))
            .method_not_allowed_fallback(method_not_allowed),
    )
}

async fn asset(Path(file): Path<String>) -> Response {
    let Some(asset) = ASSETS.iter().find(|asset| served_name(asset.name) == file) else {
        return ApiError::NotFound(format!("the API reference has no file {file}")).into_response();
    };
    let mut response = asset.bytes.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(asset.content_type),
    );
    // Its name changes with its content: it never changes under this name.
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=31536000, immutable"),
    );
    if asset.gzipped {
        // Every browser accepts gzip; RFC 9110 (12.5.3) lets a server send
        // it regardless, and keeping one stored form keeps the zip small.
        headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        headers.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    }
    response
}

async fn method_not_allowed() -> ApiError {
    // axum adds `Allow` on the way out of this fallback.
    ApiError::MethodNotAllowed {
        allow: String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};

    #[test]
    fn every_file_is_served_under_its_contents_hash() {
        for asset in ASSETS {
            let digest = Sha256::digest(asset.bytes);
            let hash: String = digest[..6].iter().map(|b| format!("{b:02x}")).collect();
            let (stem, extension) = asset.name.rsplit_once('.').unwrap_or((asset.name, ""));
            assert_eq!(
                served_name(asset.name),
                format!("{stem}.{hash}.{extension}"),
                "run scripts/docs-assets.sh after changing {}",
                asset.name
            );
        }
    }
}
