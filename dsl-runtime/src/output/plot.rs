//! `curves.svg`: one panel per metric, train and valid together, epoch on the x axis.

use plotters::prelude::*;

use crate::history::{History, Split};

const PANEL: (u32, u32) = (480, 320);
/// Longest curve drawn with a marker on every epoch.
const MARKERS_UP_TO: usize = 60;

/// The SVG text of the curves of every metric in `history`.
pub(crate) fn curves_svg(history: &History) -> Result<String, String> {
    let mut metrics: Vec<&str> = Vec::new();
    for series in history.series() {
        if !metrics.contains(&series.metric.as_str()) {
            metrics.push(&series.metric);
        }
    }
    let columns = metrics.len().clamp(1, 2) as u32;
    let rows = metrics.len().div_ceil(2).max(1) as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (PANEL.0 * columns, PANEL.1 * rows))
            .into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let panels = root.split_evenly((rows as usize, columns as usize));
        for (metric, panel) in metrics.iter().zip(panels.iter()) {
            draw_panel(panel, history, metric).map_err(|e| e.to_string())?;
        }
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    history: &History,
    metric: &str,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let curves: Vec<Curve> = [Split::Train, Split::Valid]
        .into_iter()
        .filter_map(|split| {
            let color = match split {
                Split::Train => BLUE,
                // Only the two per-epoch splits are drawn.
                _ => RED,
            };
            let series = history.get(split, metric)?;
            Some((split.as_str().to_owned(), color, series.epochs.clone()))
        })
        .collect();
    draw_curves(area, metric, curves)
}

/// `sweep.svg`: the curve of the ranked metric of every trial (`label`, `(epoch, value)`s), in
/// one panel titled `metric`.
pub(crate) fn sweep_svg(
    metric: &str,
    trials: &[(String, Vec<(usize, f64)>)],
) -> Result<String, String> {
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (PANEL.0 * 2, PANEL.1 * 2)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let curves = trials
            .iter()
            .enumerate()
            .map(|(k, (label, points))| {
                let c = Palette99::pick(k).to_rgba();
                (label.clone(), RGBColor(c.0, c.1, c.2), points.clone())
            })
            .collect();
        draw_curves(&root, metric, curves).map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

/// One trial as `study.svg` draws it: its objective, whether it was pruned, and its value of
/// each searched key on that key's axis (the logarithm for a `log_uniform` key).
pub(crate) struct StudyPoint {
    pub trial: usize,
    pub objective: f64,
    pub pruned: bool,
    pub keys: Vec<f64>,
}

/// `study.svg`: the objective of each trial with the best so far (of complete trials), then
/// the objective against each key (`axes`: the keys' axis titles). Pruned trials are grey.
pub(crate) fn study_svg(
    objective: &str,
    maximize: bool,
    axes: &[String],
    points: &[StudyPoint],
) -> Result<String, String> {
    let panels = 1 + axes.len();
    let columns = panels.clamp(1, 2) as u32;
    let rows = panels.div_ceil(2) as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (PANEL.0 * columns, PANEL.1 * rows))
            .into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let areas = root.split_evenly((rows as usize, columns as usize));
        let finite: Vec<&StudyPoint> = points.iter().filter(|p| p.objective.is_finite()).collect();
        // Objectives spanning decades (a diverged trial's loss beside the best one's) are drawn
        // as their logarithm, so that the good trials are not one flat line at the bottom.
        let (lo, hi) = finite.iter().fold((f64::INFINITY, 0.0_f64), |(lo, hi), p| {
            (lo.min(p.objective), hi.max(p.objective))
        });
        let log = lo > 0.0 && hi / lo > 100.0;
        let y = |v: f64| if log { v.log10() } else { v };
        let title = match log {
            true => format!("log10 {objective}"),
            false => objective.to_owned(),
        };
        let mut best = Vec::new();
        let mut so_far: Option<f64> = None;
        for p in finite.iter().filter(|p| !p.pruned) {
            let better = so_far.is_none_or(|b| {
                if maximize {
                    p.objective > b
                } else {
                    p.objective < b
                }
            });
            if better {
                so_far = Some(p.objective);
            }
            best.push((p.trial as f64, y(so_far.unwrap_or(p.objective))));
        }
        let by_trial: Vec<(f64, f64, bool)> = finite
            .iter()
            .map(|p| (p.trial as f64, y(p.objective), p.pruned))
            .collect();
        scatter(&areas[0], "trial", &title, &by_trial, Some(&best)).map_err(|e| e.to_string())?;
        for (k, (axis, area)) in axes.iter().zip(areas.iter().skip(1)).enumerate() {
            let by_key: Vec<(f64, f64, bool)> = finite
                .iter()
                .filter_map(|p| Some((*p.keys.get(k)?, y(p.objective), p.pruned)))
                .filter(|(x, _, _)| x.is_finite())
                .collect();
            scatter(area, axis, &title, &by_key, None).map_err(|e| e.to_string())?;
        }
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

/// Points `(x, objective, pruned)`, with a line through `line` when given.
/// `lr-find.svg`: the loss (raw and smoothed) against the rate, on a logarithmic axis, the
/// suggested rate marked. `points` are (rate, loss, smoothed loss).
pub(crate) fn lr_find_svg(points: &[(f64, f64, f64)], suggestion: f64) -> Result<String, String> {
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (PANEL.0 * 2, PANEL.1 * 2)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        lr_find_chart(&root, points, suggestion).map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

fn lr_find_chart<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    points: &[(f64, f64, f64)],
    suggestion: f64,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let finite = || points.iter().filter(|p| p.1.is_finite() && p.2.is_finite());
    let x = padded(finite().map(|p| p.0.log10()));
    let y = padded(finite().flat_map(|p| [p.1, p.2]));
    let mut chart = ChartBuilder::on(area)
        .caption("loss by learning rate", ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(x, y.clone())?;
    chart
        .configure_mesh()
        .x_desc("learning rate")
        .x_label_formatter(&|x| format!("{:.0e}", 10f64.powf(*x)))
        .y_desc("loss")
        .draw()?;
    let grey = RGBColor(160, 160, 160);
    let loss = finite().map(|p| (p.0.log10(), p.1));
    labelled_line(&mut chart, loss, (grey, 1), "loss".to_owned())?;
    let smoothed = finite().map(|p| (p.0.log10(), p.2));
    labelled_line(&mut chart, smoothed, (BLUE, 2), "smoothed".to_owned())?;
    let (at, label) = (suggestion.log10(), format!("suggested {suggestion:.2e}"));
    labelled_line(&mut chart, [(at, y.start), (at, y.end)], (RED, 2), label)?;
    legend(&mut chart)
}

/// A chart over two `f64` axes, as every chart here is drawn.
type Chart<'a, DB> = ChartContext<
    'a,
    DB,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// A line of `points` in `color`, `width` pixels wide, with its entry in the legend.
fn labelled_line<'a, DB: DrawingBackend + 'a>(
    chart: &mut Chart<'a, DB>,
    points: impl IntoIterator<Item = (f64, f64)>,
    (color, width): (RGBColor, u32),
    label: String,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    chart
        .draw_series(LineSeries::new(points, color.stroke_width(width)))?
        .label(label)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
    Ok(())
}

/// The legend of the chart's labelled lines, on a translucent white box.
fn legend<'a, DB: DrawingBackend + 'a>(
    chart: &mut Chart<'a, DB>,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
}

fn scatter<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    x_desc: &str,
    objective: &str,
    points: &[(f64, f64, bool)],
    line: Option<&[(f64, f64)]>,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let (x, y) = (
        padded(points.iter().map(|p| p.0)),
        padded(points.iter().map(|p| p.1)),
    );
    let mut chart = ChartBuilder::on(area)
        .caption(format!("{objective} by {x_desc}"), ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(x, y)?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(objective)
        .draw()?;
    let grey = RGBColor(160, 160, 160);
    chart.draw_series(points.iter().map(|&(x, y, pruned)| {
        Circle::new(
            (x, y),
            3,
            if pruned { grey.filled() } else { BLUE.filled() },
        )
    }))?;
    if let Some(line) = line {
        let best = line.iter().copied();
        labelled_line(&mut chart, best, (RED, 2), "best so far".to_owned())?;
        legend(&mut chart)?;
    }
    Ok(())
}

/// The range of an axis drawn over `values`, 5 % wider on each side; 0 to 1 without any.
fn padded(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (mut lo, mut hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if !lo.is_finite() {
        (lo, hi) = (0.0, 1.0);
    }
    let pad = ((hi - lo) * 0.05).max(1e-9);
    (lo - pad)..(hi + pad)
}

/// A labelled line: its legend text, color and `(epoch, value)` points.
type Curve = (String, RGBColor, Vec<(usize, f64)>);

/// One chart of `curves` over epochs, non-finite values left out.
fn draw_curves<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    curves: Vec<Curve>,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let curves: Vec<Curve> = curves
        .into_iter()
        .map(|(label, color, points)| {
            let finite = points.into_iter().filter(|(_, v)| v.is_finite()).collect();
            (label, color, finite)
        })
        .filter(|(_, _, points): &Curve| !points.is_empty())
        .collect();
    let all = || curves.iter().flat_map(|(_, _, p)| p.iter());
    let last = all().map(|&(epoch, _)| epoch).fold(1usize, usize::max);
    let values = padded(all().map(|&(_, value)| value));
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(50)
        .build_cartesian_2d(1f64..(last.max(2) as f64), values)?;
    chart
        .configure_mesh()
        .x_desc("epoch")
        .x_labels(last.clamp(2, 10))
        .x_label_formatter(&|x| format!("{x:.0}"))
        .draw()?;
    for (label, color, points) in curves {
        let line = points.iter().map(|&(e, v)| (e as f64, v));
        labelled_line(&mut chart, line.clone(), (color, 2), label)?;
        // Markers help read a few epochs; on long runs they would only blur the line (and cost
        // an SVG element each).
        if points.len() <= MARKERS_UP_TO {
            chart.draw_series(line.map(|p| Circle::new(p, 3, color.filled())))?;
        }
    }
    legend(&mut chart)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_metric_gets_a_panel_with_its_name() {
        let mut history = History::default();
        let loss_train = history.declare(Split::Train, "loss", false);
        let loss_valid = history.declare(Split::Valid, "loss", false);
        let acc = history.declare(Split::Valid, "accuracy", true);
        for epoch in 1..=3 {
            history.record_epoch(loss_train, epoch, 1.0 / epoch as f64);
            history.record_epoch(loss_valid, epoch, 1.2 / epoch as f64);
            history.record_epoch(acc, epoch, 50.0 + epoch as f64);
        }
        let svg = curves_svg(&history).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..60]);
        // plotters writes each label on a line of its own inside <text>.
        for label in ["loss", "accuracy", "train", "valid", "epoch"] {
            assert!(
                svg.contains(&format!("\n{label}\n</text>")),
                "no label {label}"
            );
        }
    }
}
