//! The OpenAPI 3.1 document of the API, served at `GET /v1/openapi.json` and checked into
//! docs/service-openapi.json (a test keeps the two the same).

/// The document.
pub const DOCUMENT: &str = include_str!("openapi.json");
