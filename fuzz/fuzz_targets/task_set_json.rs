#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| tinct_fuzz::task_set::check_json(data));
