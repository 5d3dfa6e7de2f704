//! What a run prints: one line per epoch with every metric's value, and a summary table.
//!
//! Burn's `CliMetricsRenderer` prints progress but no metric value; these lines go to stderr so
//! that a program's own stdout stays its own.

use std::time::Duration;

use crate::history::History;

/// `epoch 2/3  train.loss 0.6160  valid.loss 0.5939  valid.accuracy 75.0000  (0.01 s)`
pub(crate) fn epoch_line(
    history: &History,
    epoch: usize,
    last_epoch: usize,
    elapsed: Duration,
) -> String {
    let mut line = format!("epoch {epoch}/{last_epoch}");
    for series in history.series() {
        if let Some(value) = series.at(epoch) {
            line.push_str(&format!("  {}.{} {value:.4}", series.split, series.metric));
        }
    }
    line.push_str(&format!("  ({:.2} s)", elapsed.as_secs_f64()));
    line
}

/// The final table: min and max of every metric over epochs, with the epochs they occurred in.
pub fn summary_table(history: &History) -> String {
    let mut rows = vec![[
        "split".to_owned(),
        "metric".to_owned(),
        "min".to_owned(),
        "epoch".to_owned(),
        "max".to_owned(),
        "epoch".to_owned(),
    ]];
    for series in history.series() {
        let Some(ext) = series.extremes() else {
            continue;
        };
        rows.push([
            series.split.to_string(),
            series.metric.clone(),
            format!("{:.4}", ext.min.0),
            ext.min.1.to_string(),
            format!("{:.4}", ext.max.0),
            ext.max.1.to_string(),
        ]);
    }
    let widths: Vec<usize> = (0..6)
        .map(|c| rows.iter().map(|r| r[c].len()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for (i, row) in rows.iter().enumerate() {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
        if i == 0 {
            let rules: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
            out.push_str(&format!("|-{}-|\n", rules.join("-|-")));
        }
    }
    out
}
