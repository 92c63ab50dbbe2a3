// `sqlx::migrate!` embeds the migrations folder when src/db compiles; without this line an
// incremental build would not notice a new migration file and ship the old set.
fn main() {
    println!("cargo:rerun-if-changed=../../migrations");
}
