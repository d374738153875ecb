#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| tinct_fuzz::lists::check_cpu_list(data));
