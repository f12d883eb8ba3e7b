//! The service's web page, at `/`: upload a predictions file as a batch, watch it (each
//! evaluation's state and verdict as they come, the counts, a progress bar), open each finished
//! evaluation's HTML report and the batch's leaderboard, and list earlier batches. Plain HTML, a
//! small script and a style sheet, all in the binary (`web/`): the page loads nothing from
//! elsewhere and works offline. It speaks only the API (`/v1`), as any client does; with a
//! service that asks for a bearer token it asks for one and keeps it in the tab's
//! `sessionStorage` only.
//!
//! The page and its assets need no token (they hold no data). Everything the page shows from the
//! service is set as text (`textContent`), never parsed as HTML: instance ids, model names,
//! errors and events are hostile input.

use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use std::sync::Arc;

use crate::Shared;

/// The page.
pub const INDEX_HTML: &str = include_str!("web/index.html");
/// Its script.
pub const APP_JS: &str = include_str!("web/app.js");
/// Its style sheet.
pub const APP_CSS: &str = include_str!("web/app.css");

/// Where the page's assets are served.
pub const ASSETS: &str = "/ui";

/// The page's Content-Security-Policy: its own script and style only; requests to the service
/// only; no framing. The inline style and script hashes of the HTML reports are allowed too, for
/// a report the page opens from a `blob:` URL (fetched with the token), which runs under the
/// policy of the page that made it as well as under its own.
pub fn page_csp() -> String {
    let (style, script) = swtbench_html::render::inline_hashes();
    format!(
        "default-src 'none'; script-src 'self' '{script}'; style-src 'self' '{style}'; \
         connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; \
         frame-ancestors 'none'"
    )
}

/// The routes of the page and its assets (no token needed).
pub fn routes() -> Router<Arc<Shared>> {
    Router::new()
        .route("/", get(index))
        .route(&format!("{ASSETS}/app.js"), get(app_js))
        .route(&format!("{ASSETS}/app.css"), get(app_css))
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    let mut r = ([(header::CONTENT_TYPE, content_type)], body).into_response();
    let h = r.headers_mut();
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

async fn index() -> Response {
    crate::api::html_page(INDEX_HTML.to_string(), &page_csp())
}

async fn app_js() -> Response {
    asset("text/javascript; charset=utf-8", APP_JS)
}

async fn app_css() -> Response {
    asset("text/css; charset=utf-8", APP_CSS)
}
