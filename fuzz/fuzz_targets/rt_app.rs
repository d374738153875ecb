#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| tinct_fuzz::rt_app::check(data));
