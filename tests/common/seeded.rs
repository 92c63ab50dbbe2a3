//! Example content for tests that need a realistic journal.

use super::TestApp;

impl TestApp {
    /// Loads the three demo investigations with their entries, owned by the first admin.
    pub async fn seed_demo(&self) {
        let owner = perfjournal::investigations::seed::default_owner(&self.pool)
            .await
            .unwrap()
            .expect("an admin exists");
        perfjournal::investigations::seed::seed_demo(&self.pool, owner)
            .await
            .unwrap();
    }
}
