//! The proxy's own errors, in the API's shape: a bad request names its
//! field, a store failure is a 500, an upstream out of reach a 502.

use std::time::Duration;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use ctxproxy_service::service::ServiceError;

use crate::api::{Api, ErrorKind};

pub(crate) const UNAUTHORISED: &str = "ctxproxy: this proxy requires the x-ctxproxy-token header";

/// Our own error, in the API's shape.
pub(crate) fn error<A: Api>(
    status: StatusCode,
    kind: ErrorKind,
    message: &str,
    param: Option<&str>,
) -> Response {
    (status, Json(A::error_body(kind, message, param))).into_response()
}

/// A body read once that does not read again: cannot happen (it is the
/// same bytes), answered as a body that is not JSON.
pub(crate) fn not_json<A: Api>(e: &serde_json::Error) -> Response {
    error::<A>(
        StatusCode::BAD_REQUEST,
        ErrorKind::InvalidRequest,
        &format!("body: not JSON: {e}"),
        Some("body"),
    )
}

/// A 408: the body did not arrive within `--body-timeout`.
pub(crate) fn body_too_slow<A: Api>(timeout: Duration) -> Response {
    error::<A>(
        StatusCode::REQUEST_TIMEOUT,
        ErrorKind::InvalidRequest,
        &format!("body: not received within {timeout:?} (--body-timeout)"),
        Some("body"),
    )
}

pub(crate) fn service_error<A: Api>(e: ServiceError) -> Response {
    match e {
        ServiceError::BudgetTooSmall(_) => error::<A>(
            StatusCode::BAD_REQUEST,
            ErrorKind::InvalidRequest,
            &format!(
                "x-ctxproxy-budget: {e}; raise it with the x-ctxproxy-budget header or --config '{{\"budget\": N}}'"
            ),
            Some("x-ctxproxy-budget"),
        ),
        ServiceError::InvalidParams(_) | ServiceError::PayloadTooLarge(_) => error::<A>(
            StatusCode::BAD_REQUEST,
            ErrorKind::InvalidRequest,
            &e.to_string(),
            None,
        ),
        _ => error::<A>(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorKind::Internal,
            &format!("ctxproxy: {e}"),
            None,
        ),
    }
}
