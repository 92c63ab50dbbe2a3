//! Which of Nsight Systems' tables and columns a file has: exports differ by version
//! and by what was traced, so every read is planned from what is there.

use super::*;

/// The columns of the tables read, as found in the file.
pub(super) struct Schema {
    pub(super) tables: HashMap<&'static str, HashSet<String>>,
    /// `StringIds.id` is the rowid (INTEGER PRIMARY KEY), so a lookup is one b-tree seek.
    pub(super) strings_indexed: bool,
    /// A table only Nsight Systems writes (see [`is_nsight_table`]): the file is an
    /// export even without CUDA tables.
    pub(super) nsight: bool,
}

/// Tables every Nsight Systems export has, whatever was traced: its enumerations
/// (`ENUM_NSYS_EVENT_TYPE` …), the session's start time and the export's metadata.
pub(super) fn is_nsight_table(name: &str) -> bool {
    name.starts_with("ENUM_NSYS_")
        || matches!(
            name,
            "TARGET_INFO_SESSION_START_TIME" | "META_DATA_EXPORT" | "EXPORT_META_DATA"
        )
}

impl Schema {
    pub(super) fn read(conn: &Connection) -> Result<Schema, AnalyzeError> {
        let mut tables = HashMap::new();
        let mut stmt = conn
            .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'table'")
            .map_err(|e| sql_error("reading the schema", e))?;
        let mut rows = stmt
            .query([])
            .map_err(|e| sql_error("reading the schema", e))?;
        let mut found = Vec::new();
        let mut nsight = false;
        while let Some(row) = rows
            .next()
            .map_err(|e| sql_error("reading the schema", e))?
        {
            let name = text(row, 0)?.unwrap_or_default();
            let sql = text(row, 1)?.unwrap_or_default();
            nsight |= is_nsight_table(&name);
            let Some(t) = TABLES.iter().find(|t| **t == name) else {
                continue;
            };
            // A virtual table runs a module's code, not stored rows: never read.
            if sql
                .trim_start()
                .to_ascii_uppercase()
                .starts_with("CREATE VIRTUAL")
            {
                continue;
            }
            found.push(*t);
        }
        drop(rows);
        drop(stmt);
        let mut strings_indexed = false;
        for t in found {
            let mut cols = HashSet::new();
            let what = format!("reading the columns of {t}");
            let mut stmt = conn
                .prepare("SELECT name, type, pk FROM pragma_table_info(?1)")
                .map_err(|e| sql_error(&what, e))?;
            let mut rows = stmt.query([t]).map_err(|e| sql_error(&what, e))?;
            while let Some(row) = rows.next().map_err(|e| sql_error(&what, e))? {
                let name = text(row, 0)?.unwrap_or_default();
                if t == STRINGS_TABLE && name == "id" {
                    let ty = text(row, 1)?.unwrap_or_default();
                    strings_indexed = ty.eq_ignore_ascii_case("INTEGER") && int(row, 2)? == Some(1);
                }
                cols.insert(name);
            }
            tables.insert(t, cols);
        }
        Ok(Schema {
            tables,
            strings_indexed,
            nsight,
        })
    }

    pub(super) fn has(&self, table: &str) -> bool {
        self.tables.contains_key(table)
    }

    pub(super) fn has_col(&self, table: &str, col: &str) -> bool {
        self.tables.get(table).is_some_and(|c| c.contains(col))
    }

    /// `t.col` when the table has the column, else NULL.
    pub(super) fn col(&self, table: &str, col: &str) -> String {
        if self.has_col(table, col) {
            format!("t.\"{col}\"")
        } else {
            "NULL".to_string()
        }
    }

    /// The string for the id in the first of `cols` that has one (at most
    /// [`MAX_NAME_CHARS`] characters), or NULL.
    pub(super) fn string_of(&self, table: &str, cols: &[&str]) -> String {
        let lookups: Vec<String> = cols
            .iter()
            .filter(|c| self.has_col(table, c))
            .map(|c| {
                if self.strings_indexed && self.has_col(STRINGS_TABLE, "value") {
                    format!(
                        "(SELECT CAST(substr(s.value, 1, {MAX_NAME_CHARS}) AS TEXT) FROM \
                         \"{STRINGS_TABLE}\" s WHERE s.id = t.\"{c}\")"
                    )
                } else {
                    // Without an indexed string table, a lookup per row could take a scan
                    // of the whole table: the id is shown instead.
                    format!("('string ' || t.\"{c}\")")
                }
            })
            .collect();
        match lookups.len() {
            0 => "NULL".to_string(),
            1 => lookups[0].clone(),
            _ => format!("COALESCE({})", lookups.join(", ")),
        }
    }

    /// The process of a row: bits 24–55 of a serialized global thread/process id.
    pub(super) fn pid(&self, table: &str, col: &str) -> String {
        if self.has_col(table, col) {
            format!("((t.\"{col}\" >> 24) & 4294967295)")
        } else {
            "NULL".to_string()
        }
    }
}
