//! A Rust program that spawns threads (std::thread, default stacks) and
//! joins them: under the shim each runs on a coloured stack, and Rust's
//! stack-overflow guard code asks glibc for the thread's guard
//! (`pthread_getattr_np`) as each thread starts. Prints "spawn SUM".

fn main() {
    let threads: Vec<_> = (0..8u64)
        .map(|i| {
            std::thread::spawn(move || {
                let local = [i as u8; 4096];
                local.iter().map(|&b| u64::from(b)).sum::<u64>()
            })
        })
        .collect();
    let sum: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    // A named thread with a stack size of its own too.
    let sized = std::thread::Builder::new()
        .name("sized".into())
        .stack_size(1 << 20)
        .spawn(|| 1u64)
        .unwrap()
        .join()
        .unwrap();
    println!("spawn {}", sum + sized);
}
