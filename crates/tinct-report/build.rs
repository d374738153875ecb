//! Generates the Rust types of `proto/perfetto_trace.proto` (the subset of
//! Perfetto's trace format tinct writes) with prost. protox compiles the
//! .proto in Rust, so no `protoc` binary is needed to build tinct.

fn main() {
    let proto = "proto/perfetto_trace.proto";
    println!("cargo:rerun-if-changed={proto}");
    let descriptors = match protox::compile([proto], ["proto"]) {
        Ok(descriptors) => descriptors,
        Err(e) => panic!("{proto}: {e}"),
    };
    if let Err(e) = prost_build::Config::new().compile_fds(descriptors) {
        panic!("{proto}: generating Rust types: {e}");
    }
}
