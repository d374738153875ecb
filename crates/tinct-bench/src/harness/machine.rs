//! The machine a bench ran on: tinct-sys's [`Machine`] (its one home, shared
//! with the run directory), re-exported where the benches have always
//! found it.

pub use tinct_sys::machine::{Machine, MachineCache};
