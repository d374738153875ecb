//! The DRAM address mapping file: written by `tinct bench dram-map`, read
//! by `tinct exec --dram-map`, `tinct bench banks --dram-map` and a task
//! set's `[platform] dram_map = "FILE"`.
//!
//! ```toml
//! # tinct bench dram-map on <machine>
//! bank_functions = ["0x44000", "0x88000", "0x110000", "0x220000"]
//! controller_functions = []
//! confidence = [0.99, 1.0, 0.98, 1.0]
//! physical = "host"
//! machine = "Intel(R) Core(TM) i5-2520M"
//! ```
//!
//! A function is an XOR mask over the physical address, DRAMA's format:
//! bank bit `i` is the parity of `address & bank_functions[i]`.
//! `controller_functions` (channels) are listed apart only when something
//! told them apart; row-buffer timing alone cannot, so `tinct bench
//! dram-map` lists every function as a bank function. `confidence` is the
//! measured confidence of each bank function (reporting only).
//! `physical` is `guest` when the addresses were a virtual machine's:
//! they are not the host's, and neither are the banks.
//!
//! The file is read and written by the `format` module, as task-set files
//! are: [`DramMap::load`], [`DramMap::parse`] (errors name the file, line
//! and field) and [`DramMap::to_toml`].

/// Whose physical addresses the functions are about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressKind {
    /// The machine's own (bare metal).
    Host,
    /// A virtual machine's guest-physical addresses.
    Guest,
}

/// A DRAM address mapping; see the module documentation.
#[derive(Debug, Clone, PartialEq)]
pub struct DramMap {
    /// Bank functions (XOR masks).
    pub bank_functions: Vec<u64>,
    /// Controller (channel) functions.
    pub controller_functions: Vec<u64>,
    /// Confidence of each bank function, 0 to 1 (empty if unknown).
    pub confidence: Vec<f64>,
    /// Host or guest addresses.
    pub physical: AddressKind,
    /// The machine it was measured on.
    pub machine: String,
}
