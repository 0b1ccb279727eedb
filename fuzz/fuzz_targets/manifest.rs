#![no_main]

use mcpeval_testkit::fuzz as targets;

libfuzzer_sys::fuzz_target!(|data: &[u8]| targets::manifest(data));
