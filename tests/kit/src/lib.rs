//! What the test suite, the benches and the fuzz runner share: the fuzz
//! targets' bodies, which run the binaries' own parsers and observers
//! through their libraries, and what a test's PostgreSQL server needs to
//! know of this machine.

pub mod fuzz;
pub mod pg_host;
