//! The data rows journeys take: a CSV file with a header line, or JSON Lines (one object a
//! line), and which row journey *i* takes.
use std::path::{Path, PathBuf};

use super::choice;
use super::error::{JourneyError, JourneyErrorKind as Kind};

/// Which row journey *i* takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DataOrder {
    /// Row `i mod rows`: the rows in turn, from the top again when they run out.
    #[default]
    Sequential,
    /// A row drawn from the journey's index and the run's seed; rows repeat.
    Random,
    /// Row `i`, never again: each journey its own row. A run refuses to start with fewer
    /// rows than journeys ([`unique_rows_suffice`]).
    Unique,
}

impl DataOrder {
    pub fn parse(text: &str) -> Result<DataOrder, String> {
        match text {
            "sequential" => Ok(DataOrder::Sequential),
            "random" => Ok(DataOrder::Random),
            "unique" => Ok(DataOrder::Unique),
            other => Err(format!(
                "order {other:?}: write \"sequential\" (rows in turn), \"random\" (a seeded draw) \
                 or \"unique\" (each journey its own row)"
            )),
        }
    }
}

/// One row of the data file: a value for each column, in the columns' order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    values: Vec<String>,
}

impl Row {
    /// The value of column `index` (see [`Rows::column`]).
    pub fn get(&self, index: usize) -> &str {
        &self.values[index]
    }
}

/// The data file's rows, read once before the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rows {
    path: PathBuf,
    columns: Vec<String>,
    rows: Vec<Row>,
    order: DataOrder,
}

impl Rows {
    /// Reads `path`: CSV when it ends in `.csv`, JSON Lines when it ends in `.jsonl` or
    /// `.ndjson`. `line` is where the journey file names it, for the errors about the file as
    /// a whole (missing, unreadable, empty); a bad line in it is named in the data file itself.
    pub(super) fn read(
        path: &Path,
        order: DataOrder,
        journey_file: &Path,
        line: usize,
    ) -> Result<Rows, JourneyError> {
        let at_key =
            |problem: String| JourneyError::new(journey_file, Some(line), Kind::Data, problem);
        let shown = path.display();
        let text = std::fs::read(path).map_err(|e| {
            at_key(format!(
                "data file {shown}: cannot read it ({e}); check the \
                path, which is relative to the journey file's folder"
            ))
        })?;
        let text = String::from_utf8(text).map_err(|_| {
            at_key(format!(
                "data file {shown} is not UTF-8 text: save it as UTF-8"
            ))
        })?;
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        let (columns, rows) = match extension.to_ascii_lowercase().as_str() {
            "csv" => read_csv(text, path)?,
            "jsonl" | "ndjson" => read_jsonl(text, path)?,
            _ => {
                return Err(at_key(format!(
                    "data file {shown}: name it .csv (with a header line) or .jsonl (one JSON \
                     object a line) so its format is known"
                )))
            }
        };
        if rows.is_empty() {
            return Err(at_key(format!(
                "data file {shown} holds no rows: write a header line and at least one row \
                 (CSV), or at least one JSON object (JSON Lines)"
            )));
        }
        Ok(Rows {
            path: path.to_path_buf(),
            columns,
            rows,
            order,
        })
    }

    /// Rows made in code, in sequential order (tests and library users).
    pub fn new(columns: Vec<String>, values: Vec<Vec<String>>, order: DataOrder) -> Rows {
        let rows = values.into_iter().map(|values| Row { values }).collect();
        Rows {
            path: PathBuf::new(),
            columns,
            rows,
            order,
        }
    }

    #[cfg(test)]
    pub(super) fn for_tests(columns: &[&str], rows: &[&[&str]]) -> Rows {
        let columns = columns.iter().map(|c| c.to_string()).collect();
        let values = rows
            .iter()
            .map(|r| r.iter().map(|v| v.to_string()).collect())
            .collect();
        Rows::new(columns, values, DataOrder::Sequential)
    }

    /// The place of column `name`, if the file has it.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }

    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    pub fn row(&self, index: usize) -> &Row {
        &self.rows[index]
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn order(&self) -> DataOrder {
        self.order
    }

    /// The data file, as the journey file names it (joined to its folder).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The row journey `index` takes. `None` only for `unique` order past the last row, which a
    /// run that checked [`unique_rows_suffice`] never reaches.
    pub fn row_of(&self, index: u64, seed: u64) -> Option<usize> {
        let len = self.rows.len() as u64;
        match self.order {
            DataOrder::Sequential => Some((index % len) as usize),
            DataOrder::Random => Some(choice::random_row(self.rows.len(), index, seed)),
            DataOrder::Unique => (index < len).then_some(index as usize),
        }
    }
}

/// For `unique` order: whether the rows last for every journey the run schedules. The error
/// names the data file and both numbers; other orders never run out.
pub fn unique_rows_suffice(rows: &Rows, journeys_scheduled: u64) -> Result<(), JourneyError> {
    let have = rows.len() as u64;
    if rows.order != DataOrder::Unique || journeys_scheduled <= have {
        return Ok(());
    }
    Err(JourneyError::new(
        &rows.path,
        None,
        Kind::RowsRunOut,
        format!(
            "order = \"unique\" gives each journey its own row, but the file has {have} rows for \
             {journeys_scheduled} scheduled journeys: add rows, schedule at most {have} journeys, \
             or use order = \"sequential\" to reuse rows"
        ),
    ))
}

fn bad_line(path: &Path, line: u64, problem: String) -> JourneyError {
    JourneyError::new(path, Some(line as usize), Kind::Data, problem)
}

type Table = (Vec<String>, Vec<Row>);

fn read_csv(text: &str, path: &Path) -> Result<Table, JourneyError> {
    let mut reader = csv::ReaderBuilder::new().from_reader(text.as_bytes());
    let csv_error = |e: csv::Error| {
        let line = e.position().map_or(1, |p| p.line());
        let problem = match e.kind() {
            csv::ErrorKind::UnequalLengths {
                expected_len, len, ..
            } => format!(
                "{len} fields where the header has {expected_len}: give every row one value per \
                 column (quote a value that holds a comma)"
            ),
            _ => format!("not CSV ({e}): fix the line"),
        };
        bad_line(path, line, problem)
    };
    let columns: Vec<String> = reader
        .headers()
        .map_err(csv_error)?
        .iter()
        .map(str::to_string)
        .collect();
    check_columns(&columns, path, 1)?;
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(csv_error)?;
        rows.push(Row {
            values: record.iter().map(str::to_string).collect(),
        });
    }
    Ok((columns, rows))
}

fn check_columns(columns: &[String], path: &Path, line: u64) -> Result<(), JourneyError> {
    for (k, column) in columns.iter().enumerate() {
        if column.is_empty() {
            return Err(bad_line(
                path,
                line,
                format!(
                    "column {} has no name: name every column in the header line",
                    k + 1
                ),
            ));
        }
        if columns[..k].contains(column) {
            return Err(bad_line(
                path,
                line,
                format!("column {column:?} is named twice: give each column its own name"),
            ));
        }
    }
    Ok(())
}

fn read_jsonl(text: &str, path: &Path) -> Result<Table, JourneyError> {
    let mut columns: Vec<String> = Vec::new();
    let mut rows = Vec::new();
    for (k, line) in text.lines().enumerate() {
        let number = k as u64 + 1;
        if line.trim().is_empty() {
            continue;
        }
        let object = match serde_json::from_str::<serde_json::Value>(line) {
            Ok(serde_json::Value::Object(object)) => object,
            Ok(_) => return Err(bad_line(
                path,
                number,
                "not a JSON object: write one object a line, e.g. {\"email\": \"a@example.org\"}"
                    .into(),
            )),
            Err(e) => {
                return Err(bad_line(
                    path,
                    number,
                    format!("not JSON ({e}): write one object a line"),
                ))
            }
        };
        if columns.is_empty() {
            columns = object.keys().cloned().collect();
        }
        let mut values = Vec::with_capacity(columns.len());
        for column in &columns {
            let value = object.get(column).ok_or_else(|| {
                bad_line(
                    path,
                    number,
                    format!("no {column:?} key: every line has the keys of the first"),
                )
            })?;
            values.push(text_of(value));
        }
        rows.push(Row { values });
    }
    Ok((columns, rows))
}

/// A JSON value as a template writes it: a string without its quotes, `null` as nothing,
/// anything else as its JSON text.
pub(super) fn text_of(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => String::new(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(name: &str, text: &str, order: DataOrder) -> Result<Rows, JourneyError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        Rows::read(&path, order, Path::new("j.toml"), 4)
    }

    #[test]
    fn csv_rows_with_quotes() {
        let rows = read(
            "u.csv",
            "email,name\na@x.org,\"Ann, A.\"\nb@x.org,Bob\n",
            DataOrder::Sequential,
        )
        .unwrap();
        assert_eq!(rows.columns(), ["email", "name"]);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows.row(0).get(rows.column("name").unwrap()), "Ann, A.");
        assert_eq!(rows.row(1).get(0), "b@x.org");
    }

    #[test]
    fn jsonl_rows_as_text() {
        let rows = read("u.jsonl", "{\"id\": 7, \"email\": \"a@x.org\", \"vip\": null}\n\n{\"id\": 8, \"email\": \"b\", \"vip\": true}\n", DataOrder::Sequential).unwrap();
        let (id, vip) = (rows.column("id").unwrap(), rows.column("vip").unwrap());
        assert_eq!((rows.row(0).get(id), rows.row(0).get(vip)), ("7", ""));
        assert_eq!((rows.row(1).get(id), rows.row(1).get(vip)), ("8", "true"));
    }

    #[test]
    fn bad_data_names_the_right_file_and_line() {
        // The data file's own line for a bad line in it; the journey file's line (4) for the
        // file as a whole.
        for (name, text, file, line, says) in [
            (
                "u.csv",
                "a,b\n1,2\n3\n",
                "u.csv",
                3,
                "1 fields where the header has 2",
            ),
            (
                "u.csv",
                "a,a\n1,2\n",
                "u.csv",
                1,
                "column \"a\" is named twice",
            ),
            ("u.csv", "a,,b\n1,2,3\n", "u.csv", 1, "column 2 has no name"),
            ("u.csv", "a,b\n", "j.toml", 4, "holds no rows"),
            (
                "u.jsonl",
                "{\"a\": 1}\n[1]\n",
                "u.jsonl",
                2,
                "not a JSON object",
            ),
            (
                "u.jsonl",
                "{\"a\": 1}\n\n{\"b\": 2}\n",
                "u.jsonl",
                3,
                "no \"a\" key",
            ),
            ("u.jsonl", "{\"a\": 1}\n{oops\n", "u.jsonl", 2, "not JSON"),
            ("u.txt", "a\n1\n", "j.toml", 4, "name it .csv"),
        ] {
            let e = read(name, text, DataOrder::Sequential).expect_err(text);
            assert!(
                e.file.ends_with(file) && e.line == Some(line),
                "{name} {text:?}: {e}"
            );
            assert!(
                e.problem.contains(says) && e.kind == Kind::Data,
                "{name} {text:?}: {e}"
            );
        }
        let missing = Rows::read(
            Path::new("/no/such/users.csv"),
            DataOrder::Sequential,
            Path::new("j.toml"),
            9,
        );
        assert!(missing
            .unwrap_err()
            .to_string()
            .starts_with("j.toml:9: data file /no/such/users.csv: cannot read it"));
    }

    #[test]
    fn each_order_picks_its_row() {
        let values: Vec<Vec<String>> = (0..5).map(|k| vec![k.to_string()]).collect();
        let rows = |order| Rows::new(vec!["k".into()], values.clone(), order);
        let sequential = rows(DataOrder::Sequential);
        assert_eq!(
            (0..7)
                .map(|i| sequential.row_of(i, 1).unwrap())
                .collect::<Vec<_>>(),
            [0, 1, 2, 3, 4, 0, 1]
        );
        let unique = rows(DataOrder::Unique);
        assert_eq!(
            (0..5)
                .map(|i| unique.row_of(i, 1).unwrap())
                .collect::<Vec<_>>(),
            [0, 1, 2, 3, 4]
        );
        assert_eq!(unique.row_of(5, 1), None);
        let random = rows(DataOrder::Random);
        let a: Vec<usize> = (0..100).map(|i| random.row_of(i, 1).unwrap()).collect();
        assert_eq!(
            a,
            (0..100)
                .map(|i| random.row_of(i, 1).unwrap())
                .collect::<Vec<_>>()
        );
        assert_ne!(
            a,
            (0..100)
                .map(|i| random.row_of(i, 2).unwrap())
                .collect::<Vec<_>>()
        );
        assert!(a.iter().all(|&r| r < 5));
    }

    #[test]
    fn unique_rows_must_last() {
        let mut rows = read("users.csv", "k\n1\n2\n3\n", DataOrder::Unique).unwrap();
        assert!(unique_rows_suffice(&rows, 3).is_ok());
        let e = unique_rows_suffice(&rows, 4).unwrap_err();
        assert_eq!(e.kind, Kind::RowsRunOut);
        let text = e.to_string();
        assert!(
            text.contains("users.csv: ") && text.contains("has 3 rows for 4 scheduled journeys"),
            "{text}"
        );
        rows.order = DataOrder::Sequential;
        assert!(
            unique_rows_suffice(&rows, 1_000).is_ok(),
            "sequential rows are reused"
        );
    }
}
