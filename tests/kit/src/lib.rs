//! What the test suite, the benches and the fuzz runner share: the fuzz
//! targets' bodies, which run the binaries' own parsers and observers
//! through their libraries, what a test's PostgreSQL server needs to
//! know of this machine, and starting a program through a runner that
//! measures it.

pub mod fuzz;
pub mod pg_host;
pub mod wrap;
