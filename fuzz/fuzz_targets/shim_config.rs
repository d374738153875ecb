#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| tinct_fuzz::shim_config::check(data));
