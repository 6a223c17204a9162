//! `txgate`: see the library's docs (`txgate::main`) and `txgate help`.

fn main() {
    txgate::main();
}
