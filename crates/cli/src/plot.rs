//! A small SVG line-chart writer (no plotting crate: the picture is a few polylines, axes and a
//! legend, and plotters' SVG backend would add a dependency tree for that).

use std::fmt::Write;

/// One line of the chart.
#[derive(Debug, Clone)]
pub(crate) struct Series {
    /// Legend text.
    pub(crate) label: String,
    /// Stroke colour (any SVG colour).
    pub(crate) color: &'static str,
    /// Dashed stroke.
    pub(crate) dashed: bool,
    /// (x, y) points in data units, x increasing.
    pub(crate) points: Vec<(f64, f64)>,
}

const WIDTH: f64 = 900.0;
const HEIGHT: f64 = 480.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 60.0;
/// Room above the largest y tick, as a fraction of it.
const HEADROOM: f64 = 0.06;

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A "nice" tick step (1, 2 or 5 x 10^k) giving about `target` ticks over `span`.
fn tick_step(span: f64, target: f64) -> f64 {
    let raw = (span / target).max(f64::MIN_POSITIVE);
    let mag = 10f64.powf(raw.log10().floor());
    let m = raw / mag;
    let nice = if m <= 1.0 {
        1.0
    } else if m <= 2.0 {
        2.0
    } else if m <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

/// Renders a line chart: x from 0 to the first x tick at or after the largest x, y from 0 to
/// `y_max` (ticks) with a little room above it.
pub(crate) fn line_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    y_max: f64,
    series: &[Series],
) -> String {
    let x_data = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold(1.0f64, f64::max);
    // The x axis ends on a tick at or after the last point, so the last tick is labelled.
    let xstep = tick_step(x_data, 10.0);
    let x_max = (x_data / xstep).ceil() * xstep;
    let pw = WIDTH - LEFT - RIGHT;
    let ph = HEIGHT - TOP - BOTTOM;
    let sx = |x: f64| LEFT + x / x_max * pw;
    // The plot area reaches HEADROOM above `y_max`, so a line at `y_max` (100 %) is drawn
    // inside the frame, not on it.
    let y_top = y_max * (1.0 + HEADROOM);
    let sy = |y: f64| TOP + ph - (y / y_top).clamp(0.0, 1.0) * ph;
    let mut svg = String::new();
    // `write!` into a String cannot fail.
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="24" text-anchor="middle" font-size="15">{}</text>"#,
        WIDTH / 2.0,
        escape(title)
    );
    let ystep = tick_step(y_max, 5.0);
    let mut y = 0.0;
    while y <= y_max + ystep * 1e-9 {
        let py = sy(y);
        let _ = writeln!(
            svg,
            r##"<line x1="{LEFT}" y1="{py:.1}" x2="{:.1}" y2="{py:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{y}</text>"##,
            LEFT + pw,
            LEFT - 6.0,
            py + 4.0
        );
        y += ystep;
    }
    let mut x = 0.0;
    while x <= x_max + xstep * 1e-9 {
        let px = sx(x);
        let _ = writeln!(
            svg,
            r##"<line x1="{px:.1}" y1="{:.1}" x2="{px:.1}" y2="{:.1}" stroke="#333"/><text x="{px:.1}" y="{:.1}" text-anchor="middle">{x}</text>"##,
            TOP + ph,
            TOP + ph + 5.0,
            TOP + ph + 18.0
        );
        x += xstep;
    }
    let _ = writeln!(
        svg,
        r##"<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>"##
    );
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        LEFT + pw / 2.0,
        HEIGHT - 18.0,
        escape(x_label)
    );
    let _ = writeln!(
        svg,
        r#"<text transform="translate(18 {:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
        TOP + ph / 2.0,
        escape(y_label)
    );
    for s in series {
        let pts: Vec<String> = s
            .points
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", sx(x), sy(y)))
            .collect();
        let dash = if s.dashed {
            r#" stroke-dasharray="6 4""#
        } else {
            ""
        };
        let _ = writeln!(
            svg,
            r#"<polyline fill="none" stroke="{}" stroke-width="2"{dash} points="{}"/>"#,
            s.color,
            pts.join(" ")
        );
    }
    for (i, s) in series.iter().enumerate() {
        let ly = TOP + 16.0 + 18.0 * i as f64;
        let lx = LEFT + pw - 300.0;
        let dash = if s.dashed {
            r#" stroke-dasharray="6 4""#
        } else {
            ""
        };
        let _ = writeln!(
            svg,
            r#"<line x1="{lx:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{}" stroke-width="2"{dash}/><text x="{:.1}" y="{:.1}">{}</text>"#,
            lx + 28.0,
            s.color,
            lx + 34.0,
            ly + 4.0,
            escape(&s.label)
        );
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chart_has_a_polyline_per_series_and_escapes_text() {
        let s = |label: &str| Series {
            label: label.into(),
            color: "red",
            dashed: false,
            points: vec![(0.0, 100.0), (1.0, 50.0)],
        };
        let svg = line_chart("a < b", "t", "%", 100.0, &[s("x"), s("y & z")]);
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("a &lt; b") && svg.contains("y &amp; z"));
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert_eq!(tick_step(100.0, 5.0), 20.0);
        assert_eq!(tick_step(60.0, 10.0), 10.0);
    }

    /// Seconds 0..=59 end on a labelled 60 s tick, and a series at `y_max` is drawn inside the
    /// frame (below its top edge), not on it.
    #[test]
    fn last_tick_is_labelled_and_the_top_value_stays_inside_the_frame() {
        let full = Series {
            label: "honest".into(),
            color: "green",
            dashed: false,
            points: (0..60).map(|s| (f64::from(s), 100.0)).collect(),
        };
        let svg = line_chart("t", "s", "%", 100.0, &[full]);
        assert!(svg.contains(">60</text>"), "no 60 s label");
        assert!(!svg.contains(">70</text>"));
        let polyline = svg.lines().find(|l| l.starts_with("<polyline")).unwrap();
        let first_y: f64 = polyline
            .split("points=\"")
            .nth(1)
            .unwrap()
            .split([',', ' '])
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            first_y > TOP + 1.0,
            "100 % drawn at y {first_y}, the frame's top is {TOP}"
        );
        assert!(first_y < TOP + (HEIGHT - TOP - BOTTOM) * 0.1);
    }
}
