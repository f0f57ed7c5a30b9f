//! The bench's picture: each mode's staleness (1 - freshness) against the bytes it spent per
//! detected change, both on log scales, as an SVG file; a copy never refreshed (`once`) spends
//! nothing and is drawn as a dashed line, the staleness the others buy down.

use super::run::{Mode, ModeResult};
use plotters::prelude::*;
use std::path::Path;

/// Draws the modes that detected something into `path`; false when there was nothing to draw
/// (no mode detected a change, and no `once` baseline), and no file is written.
pub fn freshness_against_bytes(results: &[ModeResult], path: &Path) -> Result<bool, String> {
    let points: Vec<(&str, f64, f64)> = results
        .iter()
        .filter_map(|r| Some((r.mode.name(), r.bytes_per_change()?, r.score.freshness)))
        .filter(|(_, b, _)| *b > 0.0)
        .collect();
    let baseline = results
        .iter()
        .find(|r| r.mode == Mode::Once)
        .map(|r| r.score.freshness);
    if points.is_empty() && baseline.is_none() {
        return Ok(false);
    }
    let (lo, hi) = if points.is_empty() {
        (100.0, 100_000.0)
    } else {
        points
            .iter()
            .fold((f64::MAX, 0.0f64), |(lo, hi), (_, b, _)| {
                (lo.min(*b), hi.max(*b))
            })
    };
    // Freshness near 1 is told apart on a log scale of its complement.
    let stale = |f: f64| (1.0 - f).max(1e-6);
    let (s_lo, s_hi) = points
        .iter()
        .map(|(_, _, f)| stale(*f))
        .chain(baseline.map(stale))
        .fold((f64::MAX, 0.0f64), |(lo, hi), s| (lo.min(s), hi.max(s)));
    let e = |e: DrawingAreaErrorKind<_>| format!("{}: {e}", path.display());
    let root = SVGBackend::new(path, (720, 480)).into_drawing_area();
    root.fill(&WHITE).map_err(e)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "staleness against bytes per detected change (lower left is better)",
            ("sans-serif", 18),
        )
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(
            (lo / 2.0..hi * 2.0).log_scale(),
            (s_lo / 2.0..s_hi * 2.0).log_scale(),
        )
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_desc("bytes per detected change (both ways, every wire)")
        .y_desc("time the copy was stale, 1 - freshness")
        .draw()
        .map_err(e)?;
    if let Some(f) = baseline {
        let dashed = DashedLineSeries::new(
            [(lo / 2.0, stale(f)), (hi * 2.0, stale(f))],
            6,
            4,
            ShapeStyle::from(&BLACK.mix(0.6)).stroke_width(1),
        );
        chart.draw_series(dashed).map_err(e)?;
        chart
            .draw_series([Text::new(
                format!("once (never refreshed): {f:.3}"),
                (lo / 2.0 * 1.1, stale(f)),
                ("sans-serif", 13),
            )])
            .map_err(e)?;
    }
    chart
        .draw_series(points.iter().map(|(name, b, f)| {
            EmptyElement::at((*b, stale(*f)))
                + Circle::new((0, 0), 5, BLUE.filled())
                + Text::new(format!("{name} ({f:.4})"), (8, -14), ("sans-serif", 14))
        }))
        .map_err(e)?;
    root.present().map_err(e)?;
    Ok(true)
}
