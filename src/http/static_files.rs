//! The admin dashboard's static files, compiled into the binary so that ringmaster is one
//! file wherever it runs. `STATIC_FILES` must list every file of `static/` (a test checks).

use actix_web::http::header;
use actix_web::{HttpResponse, web};

use super::error::ApiError;

/// Every file of `static/`: path below `static/`, content type, bytes.
pub const STATIC_FILES: &[(&str, &str, &[u8])] = &[
    (
        "index.html",
        "text/html; charset=utf-8",
        include_bytes!("../../static/index.html"),
    ),
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../static/app.js"),
    ),
    (
        "api.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../static/api.js"),
    ),
    (
        "ring.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../static/ring.js"),
    ),
    (
        "table.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../static/table.js"),
    ),
    (
        "style.css",
        "text/css; charset=utf-8",
        include_bytes!("../../static/style.css"),
    ),
];

/// Serves `static/index.html` at `/`.
pub async fn get_index() -> Result<HttpResponse, ApiError> {
    serve("index.html")
}

/// Serves one file of `static/`.
pub async fn get_static_file(path: web::Path<String>) -> Result<HttpResponse, ApiError> {
    serve(&path.into_inner())
}

fn serve(path: &str) -> Result<HttpResponse, ApiError> {
    let (_, content_type, bytes) = STATIC_FILES
        .iter()
        .find(|(name, _, _)| *name == path)
        .ok_or_else(|| ApiError::NotFound(format!("{path} not found")))?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, *content_type))
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .body(*bytes))
}
