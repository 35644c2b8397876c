//! Everything sojourn shows people: terminal tables, HdrHistogram files, per-request samples,
//! and a self-contained HTML report with plots.
//!
//! - [`output`]: every file a finished run is written as, behind one trait: the result
//!   document, `.hgrm`, `.hlog`, HTML, JUnit and OpenMetrics;
//! - [`compare`]: the seeds' side-by-side table of runs with ratios;
//! - [`finding`]: what a closed loop beside an open loop shows, for the terminal and the page;
//! - [`hgrm`]: the percentile-distribution text format, as the HdrHistogram reference writes it;
//! - [`hlog`]: the HdrHistogram interval log (tagged, compressed V2 histograms);
//! - [`samples`]: streaming per-request samples (CSV or compact binary), with uniform sampling;
//! - [`gate`]: the SLO gate's verdict table, its HTML section and its JUnit XML;
//! - [`openmetrics`]: OpenMetrics text, live (its pieces) and of a finished run;
//! - [`load`]: the one loader of result documents, for every command and page that reads one;
//! - [`html`]: `sojourn report`: result files → one HTML file with inline SVG charts;
//! - [`sweep_plot`]: the capacity sweep's charts, offered vs achieved and latency vs offered.
#![forbid(unsafe_code)]

mod board;
pub mod compare;
mod error;
mod escape;
pub mod finding;
pub mod gate;
pub mod hgrm;
pub mod hlog;
pub mod html;
mod javafmt;
pub mod load;
pub mod openmetrics;
pub mod output;
mod plot;
mod repetitions;
pub mod samples;
pub mod sweep_plot;
pub mod text;
mod validity_page;

pub use board::tool_version;
pub use error::ReportError;
