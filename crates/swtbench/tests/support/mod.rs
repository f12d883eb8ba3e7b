//! What the test modules of `tests/it` share, declared once in `tests/it/main.rs` as `support`.
//! The benches include `memory.rs` (and `tests/engine_fixture`) by path.

pub mod cli;
pub mod memory;
pub mod registry;
// The engine layer's skip rule: loaded once, by the engine fixture (which the benches include).
pub use crate::engine_fixture::layer;
// Starting the binary with a hermetic environment: loaded once, by the engine fixture too.
pub use crate::engine_fixture::binary;
// The backend's Unix-socket proxy in front of the engine, which can stop answering.
#[path = "../../../swtbench-backend/tests/support/socket_proxy.rs"]
pub mod socket_proxy;
// A real PostgreSQL server started by the test (the service's queue shared by workers).
#[path = "../../../swtbench-service/tests/support/postgres.rs"]
pub mod postgres;
