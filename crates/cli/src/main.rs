//! The txgate command-line tool. Not implemented yet: it says so and exits with status 2.

fn main() {
    eprintln!(
        "txgate: the replay tool is not implemented yet; see README.md for what runs today \
         (cargo run --release -p txgate-tests --example bloom_rounds)"
    );
    std::process::exit(2);
}
