//! Line plots as hand-written SVG: axes, "nice" ticks with labels, axis
//! labels, a title and a legend. No dependency; the output is plain SVG 1.1
//! that browsers and image viewers open.

use std::fmt::Write;

/// One line of a plot.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Legend entry.
    pub name: String,
    /// (x, y) points in drawing order; a non-finite point breaks the line.
    pub points: Vec<(f64, f64)>,
    /// Dashed (for reference lines such as a budget).
    pub dashed: bool,
}

impl Series {
    /// A solid line.
    #[must_use]
    pub fn line(name: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Self {
            name: name.into(),
            points,
            dashed: false,
        }
    }

    /// A dashed horizontal line at `y` from `x0` to `x1`.
    #[must_use]
    pub fn level(name: impl Into<String>, y: f64, x0: f64, x1: f64) -> Self {
        Self {
            name: name.into(),
            points: vec![(x0, y), (x1, y)],
            dashed: true,
        }
    }
}

/// A line plot.
#[derive(Clone, Debug, PartialEq)]
pub struct Plot {
    /// Title above the plot area.
    pub title: String,
    /// Label under the x axis.
    pub x_label: String,
    /// Label beside the y axis.
    pub y_label: String,
    /// The lines, drawn in order and listed in the legend.
    pub series: Vec<Series>,
    /// Extend the y range to include 0.
    pub y_from_zero: bool,
    /// Image size (SVG user units ≈ pixels).
    pub width: u32,
    /// Image height.
    pub height: u32,
}

/// Line colours, in series order (cycled).
pub const PALETTE: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

const MARGIN_LEFT: f64 = 78.0;
const MARGIN_RIGHT: f64 = 24.0;
const MARGIN_TOP: f64 = 36.0;
const MARGIN_BOTTOM: f64 = 52.0;

impl Plot {
    /// A plot with no series yet, 720 × 360.
    #[must_use]
    pub fn new(
        title: impl Into<String>,
        x_label: impl Into<String>,
        y_label: impl Into<String>,
    ) -> Self {
        Self {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            series: Vec::new(),
            y_from_zero: false,
            width: 720,
            height: 360,
        }
    }

    /// The data range over every finite point: ((x_lo, x_hi), (y_lo, y_hi)),
    /// widened where empty or flat so that the axes have extent.
    fn range(&self) -> ((f64, f64), (f64, f64)) {
        let mut x = (f64::INFINITY, f64::NEG_INFINITY);
        let mut y = (f64::INFINITY, f64::NEG_INFINITY);
        for s in &self.series {
            for &(px, py) in s
                .points
                .iter()
                .filter(|(a, b)| a.is_finite() && b.is_finite())
            {
                x = (x.0.min(px), x.1.max(px));
                y = (y.0.min(py), y.1.max(py));
            }
        }
        if self.y_from_zero {
            y = (y.0.min(0.0), y.1.max(0.0));
        }
        let widen = |r: (f64, f64)| {
            if r.0
                .partial_cmp(&r.1)
                .is_none_or(|o| o == std::cmp::Ordering::Greater)
            {
                (0.0, 1.0)
            } else if r.1 - r.0 <= 1e-12 * r.0.abs().max(r.1.abs()).max(1e-300) {
                let d = if r.0 == 0.0 { 1.0 } else { 0.1 * r.0.abs() };
                (r.0 - d, r.1 + d)
            } else {
                r
            }
        };
        (widen(x), widen(y))
    }

    /// The plot as an SVG document.
    #[must_use]
    pub fn to_svg(&self) -> String {
        let (w, h) = (
            f64::from(self.width.max(200)),
            f64::from(self.height.max(150)),
        );
        let ((x_lo, x_hi), (y_lo, y_hi)) = self.range();
        let xt = nice_ticks(x_lo, x_hi, 8);
        let yt = nice_ticks(y_lo, y_hi, 6);
        // Axis limits: the data range rounded out to the outer ticks.
        let (x0, x1) = (x_lo.min(xt[0]), x_hi.max(xt[xt.len() - 1]));
        let (y0, y1) = (y_lo.min(yt[0]), y_hi.max(yt[yt.len() - 1]));
        // The legend sits right of the plot area, never over the data.
        let longest = self
            .series
            .iter()
            .map(|x| x.name.chars().count())
            .max()
            .unwrap_or(0) as f64;
        let (lw, lh) = (36.0 + 7.0 * longest, 8.0 + 16.0 * self.series.len() as f64);
        let legend_room = if self.series.is_empty() {
            0.0
        } else {
            (lw + 16.0).min(0.4 * w)
        };
        let (left, right) = (MARGIN_LEFT, w - MARGIN_RIGHT - legend_room);
        let (top, bottom) = (MARGIN_TOP, h - MARGIN_BOTTOM);
        let sx = |x: f64| left + (x - x0) / (x1 - x0) * (right - left);
        let sy = |y: f64| bottom - (y - y0) / (y1 - y0) * (bottom - top);
        let mut s = String::new();
        // `write!` into a String cannot fail.
        let _ = writeln!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#
        );
        let _ = writeln!(
            s,
            r#"<rect x="0" y="0" width="{w}" height="{h}" fill="white"/>"#
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="22" text-anchor="middle" font-size="15" font-weight="bold">{}</text>"#,
            0.5 * (left + right),
            escape(&self.title)
        );
        // Grid lines, ticks and tick labels.
        let xd = decimals(&xt);
        for &t in &xt {
            let x = sx(t);
            let _ = writeln!(
                s,
                r##"<line x1="{x:.1}" y1="{top:.1}" x2="{x:.1}" y2="{bottom:.1}" stroke="#e4e4e4"/><line x1="{x:.1}" y1="{bottom:.1}" x2="{x:.1}" y2="{:.1}" stroke="black"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
                bottom + 5.0,
                bottom + 18.0,
                format_tick(t, xd)
            );
        }
        let yd = decimals(&yt);
        for &t in &yt {
            let y = sy(t);
            let _ = writeln!(
                s,
                r##"<line x1="{left:.1}" y1="{y:.1}" x2="{right:.1}" y2="{y:.1}" stroke="#e4e4e4"/><line x1="{:.1}" y1="{y:.1}" x2="{left:.1}" y2="{y:.1}" stroke="black"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
                left - 5.0,
                left - 8.0,
                y + 4.0,
                format_tick(t, yd)
            );
        }
        // Axes.
        let _ = writeln!(
            s,
            r#"<polyline points="{left:.1},{top:.1} {left:.1},{bottom:.1} {right:.1},{bottom:.1}" fill="none" stroke="black"/>"#
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            0.5 * (left + right),
            h - 12.0,
            escape(&self.x_label)
        );
        let (lx, ly) = (16.0, 0.5 * (top + bottom));
        let _ = writeln!(
            s,
            r#"<text x="{lx:.1}" y="{ly:.1}" text-anchor="middle" transform="rotate(-90 {lx:.1} {ly:.1})">{}</text>"#,
            escape(&self.y_label)
        );
        // Lines, each broken at non-finite points.
        for (i, series) in self.series.iter().enumerate() {
            let colour = PALETTE[i % PALETTE.len()];
            let dash = if series.dashed {
                r#" stroke-dasharray="6 4""#
            } else {
                ""
            };
            let _ = writeln!(
                s,
                r#"<g class="series" data-name="{}" stroke="{colour}" stroke-width="1.5" fill="none"{dash}>"#,
                escape(&series.name)
            );
            for run in series
                .points
                .split(|(a, b)| !(a.is_finite() && b.is_finite()))
                .filter(|r| !r.is_empty())
            {
                let pts: Vec<String> = run
                    .iter()
                    .map(|&(x, y)| format!("{:.1},{:.1}", sx(x), sy(y)))
                    .collect();
                let _ = writeln!(s, r#"<polyline points="{}"/>"#, pts.join(" "));
            }
            let _ = writeln!(s, "</g>");
        }
        // Legend, right of the plot area, level with its top.
        let (lx0, ly0) = (right + 12.0, top);
        if !self.series.is_empty() {
            let _ = writeln!(
                s,
                r##"<g class="legend"><rect x="{lx0:.1}" y="{ly0:.1}" width="{lw:.1}" height="{lh:.1}" fill="white" fill-opacity="0.85" stroke="#999"/>"##
            );
            for (i, series) in self.series.iter().enumerate() {
                let colour = PALETTE[i % PALETTE.len()];
                let y = ly0 + 14.0 + 16.0 * i as f64;
                let dash = if series.dashed {
                    r#" stroke-dasharray="6 4""#
                } else {
                    ""
                };
                let _ = writeln!(
                    s,
                    r#"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{colour}" stroke-width="2"{dash}/><text x="{:.1}" y="{:.1}">{}</text>"#,
                    lx0 + 6.0,
                    y - 4.0,
                    lx0 + 28.0,
                    y - 4.0,
                    lx0 + 32.0,
                    y,
                    escape(&series.name)
                );
            }
            let _ = writeln!(s, "</g>");
        }
        s.push_str("</svg>\n");
        s
    }
}

/// About `max_ticks` evenly spaced round values (1, 2 or 5 × 10ⁿ apart)
/// covering [`lo`, `hi`]: the first ≤ `lo`, the last ≥ `hi`. At least two.
#[must_use]
pub fn nice_ticks(lo: f64, hi: f64, max_ticks: usize) -> Vec<f64> {
    let (lo, hi) = if lo.is_finite() && hi.is_finite() && lo < hi {
        (lo, hi)
    } else {
        (0.0, 1.0)
    };
    let raw = (hi - lo) / max_ticks.max(2) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).floor();
    let last = (hi / step).ceil();
    let n = (last - first).max(1.0) as usize;
    (0..=n).map(|i| (first + i as f64) * step).collect()
}

/// Decimals needed to tell ticks apart (from their spacing).
fn decimals(ticks: &[f64]) -> usize {
    let step = (ticks[1] - ticks[0]).abs();
    if step > 0.0 {
        (-step.log10().floor()).max(0.0) as usize
    } else {
        0
    }
}

/// A tick label: fixed decimals, scientific when the decimals would be many.
fn format_tick(v: f64, decimals: usize) -> String {
    let v = if v.abs() < 1e-300 { 0.0 } else { v };
    if decimals > 4 || v.abs() >= 1e6 {
        format!("{v:.2e}")
    } else {
        format!("{v:.decimals$}")
    }
}

/// Escapes text for SVG character data and attribute values.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_cover_the_range_with_round_steps() {
        for (lo, hi) in [(0.0, 179.0), (-3.2, 0.7), (0.001, 0.0042), (1e5, 3e5)] {
            let t = nice_ticks(lo, hi, 6);
            assert!(t.len() >= 2 && t.len() <= 13, "{t:?}");
            assert!(t[0] <= lo && *t.last().expect("non-empty") >= hi, "{t:?}");
            let step = t[1] - t[0];
            let m = step / 10f64.powf(step.log10().floor());
            assert!(
                [1.0, 2.0, 5.0, 10.0].iter().any(|r| (m - r).abs() < 1e-9),
                "{step}"
            );
        }
        assert_eq!(
            nice_ticks(0.0, 10.0, 5),
            vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
        );
    }

    #[test]
    fn text_is_escaped() {
        let mut p = Plot::new("a < b & c", "x", "y");
        p.series
            .push(Series::line("\"q\"", vec![(0.0, 1.0), (1.0, 2.0)]));
        let svg = p.to_svg();
        assert!(svg.contains("a &lt; b &amp; c"));
        assert!(svg.contains("&quot;q&quot;"));
        assert!(!svg.contains("a < b"));
    }

    #[test]
    fn flat_and_empty_data_still_draw_axes() {
        let mut p = Plot::new("t", "x", "y");
        assert!(p.to_svg().contains("<polyline"));
        p.series
            .push(Series::line("flat", vec![(0.0, 2.0), (5.0, 2.0)]));
        p.series.push(Series::line("nan", vec![(0.0, f64::NAN)]));
        let svg = p.to_svg();
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
    }

    #[test]
    fn the_legend_lies_right_of_every_data_point() {
        let mut p = Plot::new("t", "x", "y");
        p.series.push(Series::line(
            "a long series name",
            vec![(0.0, 0.0), (10.0, 5.0)],
        ));
        p.series
            .push(Series::line("b", vec![(0.0, 5.0), (10.0, 0.0)]));
        let svg = p.to_svg();
        let marker = r#"<g class="legend"><rect x=""#;
        let legend = svg.find(marker).expect("a legend");
        let x: f64 = svg[legend + marker.len()..]
            .split('"')
            .next()
            .and_then(|v| v.parse().ok())
            .expect("the legend's x");
        let max_data_x = svg
            .lines()
            .filter(|l| l.starts_with("<polyline points=") && !l.contains("fill"))
            .flat_map(|l| {
                l[18..]
                    .trim_end_matches("\"/>")
                    .split(' ')
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
            .filter_map(|pt| pt.split(',').next().and_then(|v| v.parse::<f64>().ok()))
            .fold(f64::MIN, f64::max);
        assert!(
            max_data_x > 0.0 && x > max_data_x,
            "legend at {x}, data to {max_data_x}"
        );
    }
}
