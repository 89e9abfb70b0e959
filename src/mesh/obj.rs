//! Wavefront OBJ reading and writing.
//!
//! The reader takes the geometric subset a cloth needs: `v`, `vt`, `vn` (counted, for index checks,
//! otherwise ignored) and `f`, with fan triangulation of polygons. It is strict about what it does
//! read (every malformed line is an error naming the file and the 1-based line) and never panics,
//! whatever the input. Other statements (`o`, `g`, `s`, `usemtl`, `mtllib`, `l`, `p`, and any
//! statement it does not know) are ignored.
//!
//! Choices where OBJ is loose:
//! - A line ending in `\` continues on the next; errors name the first physical line.
//! - `#` starts a comment anywhere on a line.
//! - `v` takes `x y z`, `x y z w` (w ignored) or `x y z r g b` (the common vertex-colour extension,
//!   colour ignored); `vt` takes `u v` or `u v w` (w ignored); `vn` takes `x y z`. Coordinates must
//!   be finite.
//! - Positive indices may refer forward (they are checked against the final counts); negative
//!   indices are relative to the elements defined so far, as the format requires.
//! - Texture coordinates are all or nothing: if the first face has them, every face must, and
//!   vice versa; the first face that differs is the error. `vt` values are taken as material
//!   coordinates as they are (metres in the flat pattern, by weft's convention).
//! - Repeated vertices inside a face are not rejected here; [`TriMesh::validate`] reports them
//!   with the triangle index.
#![deny(unsafe_code)]

use std::io::Write;
use std::path::Path;

use glam::{Vec2, Vec3};

use super::TriMesh;
use super::validate::MeshError;

/// One face corner: zero-based indices (positive ones still unchecked against the final counts).
#[derive(Clone, Copy)]
struct Corner {
    v: u64,
    vt: Option<u64>,
    vn: Option<u64>,
}

/// A parsed `f` line: its 1-based line number and its corners `corners[start..end]`.
struct Face {
    line: usize,
    start: usize,
    end: usize,
}

/// Parses `count` finite `f32`s from `tokens`.
fn parse_floats<'a>(
    tokens: impl Iterator<Item = &'a str>,
    what: &str,
    counts: &[usize],
) -> Result<Vec<f32>, String> {
    let mut out = Vec::with_capacity(4);
    for tok in tokens {
        let x: f32 = tok
            .parse()
            .map_err(|_| format!("{what}: `{tok}` is not a number"))?;
        if !x.is_finite() {
            return Err(format!("{what}: `{tok}` is not finite"));
        }
        out.push(x);
    }
    if !counts.contains(&out.len()) {
        let allowed: Vec<String> = counts.iter().map(usize::to_string).collect();
        return Err(format!(
            "{what}: expected {} numbers, found {}",
            allowed.join(" or "),
            out.len()
        ));
    }
    Ok(out)
}

/// Resolves an OBJ index (1-based, or negative = relative to the `defined` elements so far) to a
/// zero-based index. Positive indices are checked later against the final count.
fn resolve_index(tok: &str, defined: usize, what: &str) -> Result<u64, String> {
    let n: i64 = tok
        .parse()
        .map_err(|_| format!("{what} index `{tok}` is not an integer"))?;
    if n > 0 {
        Ok(n as u64 - 1)
    } else if n < 0 {
        // `defined` is a Vec length, so it fits i64; `defined + n` cannot overflow for n < 0.
        let r = defined as i64 + n;
        if r < 0 {
            Err(format!(
                "relative {what} index {n} reaches before the first {what} ({defined} defined so far)"
            ))
        } else {
            Ok(r as u64)
        }
    } else {
        Err(format!("{what} index 0 (OBJ indices start at 1)"))
    }
}

/// Parses one face-vertex reference: `v`, `v/vt`, `v//vn` or `v/vt/vn`.
fn parse_corner(tok: &str, nv: usize, nvt: usize, nvn: usize) -> Result<Corner, String> {
    let mut parts = tok.split('/');
    let v = parts.next().unwrap_or("");
    let vt = parts.next();
    let vn = parts.next();
    if parts.next().is_some() {
        return Err(format!(
            "face vertex `{tok}` has more than three `/`-separated fields"
        ));
    }
    if v.is_empty() {
        return Err(format!("face vertex `{tok}` has no vertex index"));
    }
    let v = resolve_index(v, nv, "vertex")?;
    let vt = match (vt, vn) {
        (None, _) => None,
        (Some(""), Some(_)) => None, // v//vn
        (Some(""), None) => return Err(format!("face vertex `{tok}` has an empty texture index")),
        (Some(t), _) => Some(resolve_index(t, nvt, "texture coordinate")?),
    };
    let vn = match vn {
        None => None,
        Some("") => return Err(format!("face vertex `{tok}` has an empty normal index")),
        Some(n) => Some(resolve_index(n, nvn, "normal")?),
    };
    Ok(Corner { v, vt, vn })
}

/// Splits `text` into logical lines: `(1-based first physical line, content)`, joining lines that
/// end in `\` and dropping `\r` line ends.
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    for (i, raw) in text.split('\n').enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let (body, continued) = match line.strip_suffix('\\') {
            Some(b) => (b, true),
            None => (line, false),
        };
        let entry = pending.get_or_insert_with(|| (i + 1, String::new()));
        if !entry.1.is_empty() {
            entry.1.push(' ');
        }
        entry.1.push_str(body);
        if !continued {
            out.extend(pending.take());
        }
    }
    out.extend(pending);
    out
}

/// Parses OBJ text into a [`TriMesh`]; `file` is only used in error messages.
///
/// Reads `v` (`x y z [w]`), `vt` (`u v [w]`), `vn` (counted, ignored) and `f` with `v`, `v/vt`,
/// `v//vn` and `v/vt/vn` corners and negative (relative) indices; polygons are fan-triangulated
/// from their first corner (`n` corners give `n - 2` triangles in order). If every face has
/// texture coordinates, `corner_uvs` holds them per triangle corner; if none has, it is `None`.
/// See the module doc for the accepted forms.
///
/// Errors: [`MeshError::Obj`] with the file and the 1-based line of the first malformed line (bad
/// number, wrong count, index 0, index out of range, face with fewer than 3 corners, texture
/// coordinates on some faces only, ...). A file without faces is not an error here; it gives an
/// empty mesh that [`TriMesh::validate`] rejects. Never panics.
pub fn read_obj(text: &str, file: &str) -> Result<TriMesh, MeshError> {
    read_obj_with_lines(text, file).map(|(mesh, _)| mesh)
}

/// Where each vertex and triangle of a mesh read from an OBJ file was written: 1-based lines,
/// one per vertex (its `v` line) and one per triangle (its `f` line; a polygon's fan triangles
/// share it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObjLines {
    /// The file name as given.
    pub file: String,
    /// Line of each vertex.
    pub vertices: Vec<usize>,
    /// Line of each triangle.
    pub triangles: Vec<usize>,
}

impl ObjLines {
    /// `e`, an error about the mesh read from this file, placed in it: the file, and the line
    /// of the face or vertex it names (of the last face of a non-manifold edge, of the second of
    /// two faces with inconsistent orientation); the file alone for errors without a place.
    #[must_use]
    pub fn place(&self, e: MeshError) -> MeshError {
        let face = |f: u32| self.triangles.get(f as usize).copied();
        let line = match &e {
            MeshError::Obj { .. } | MeshError::Io { .. } | MeshError::InFile { .. } => return e,
            MeshError::IndexOutOfRange { face: f, .. }
            | MeshError::RepeatedIndex { face: f }
            | MeshError::ZeroArea { face: f }
            | MeshError::Sliver { face: f, .. }
            | MeshError::BadUv { face: f } => face(*f),
            MeshError::NonManifoldEdge { faces, .. } => faces.last().and_then(|&f| face(f)),
            MeshError::InconsistentOrientation { face_b, .. } => face(*face_b),
            MeshError::NonFinite { vertex } => self.vertices.get(*vertex as usize).copied(),
            MeshError::Empty | MeshError::InvalidParameter { .. } => None,
        };
        MeshError::InFile {
            file: self.file.clone(),
            line: line.unwrap_or(0),
            source: Box::new(e),
        }
    }
}

/// [`read_obj`], and the line of every vertex and triangle ([`ObjLines`]), so that later checks
/// of the mesh can name the line of what they refuse.
pub fn read_obj_with_lines(text: &str, file: &str) -> Result<(TriMesh, ObjLines), MeshError> {
    let mut vertex_lines: Vec<usize> = Vec::new();
    let mut triangle_lines: Vec<usize> = Vec::new();
    let err = |line: usize, message: String| MeshError::Obj {
        file: file.to_owned(),
        line,
        message,
    };

    let mut positions: Vec<Vec3> = Vec::new();
    let mut uvs: Vec<Vec2> = Vec::new();
    let mut num_normals = 0usize;
    let mut corners: Vec<Corner> = Vec::new();
    let mut faces: Vec<Face> = Vec::new();

    for (line, content) in logical_lines(text) {
        let content = content.split('#').next().unwrap_or("");
        let mut tokens = content.split_whitespace();
        let Some(keyword) = tokens.next() else {
            continue;
        };
        match keyword {
            "v" => {
                let xs = parse_floats(tokens, "vertex", &[3, 4, 6]).map_err(|m| err(line, m))?;
                if positions.len() >= u32::MAX as usize {
                    return Err(err(
                        line,
                        "more vertices than the u32 index range".to_owned(),
                    ));
                }
                positions.push(Vec3::new(xs[0], xs[1], xs[2]));
                vertex_lines.push(line);
            }
            "vt" => {
                let xs = parse_floats(tokens, "texture coordinate", &[2, 3])
                    .map_err(|m| err(line, m))?;
                uvs.push(Vec2::new(xs[0], xs[1]));
            }
            "vn" => {
                parse_floats(tokens, "normal", &[3]).map_err(|m| err(line, m))?;
                num_normals += 1;
            }
            "f" => {
                let start = corners.len();
                for tok in tokens {
                    let c = parse_corner(tok, positions.len(), uvs.len(), num_normals)
                        .map_err(|m| err(line, m))?;
                    corners.push(c);
                }
                let end = corners.len();
                if end - start < 3 {
                    return Err(err(
                        line,
                        format!("face with {} vertices (at least 3 needed)", end - start),
                    ));
                }
                faces.push(Face { line, start, end });
            }
            _ => {}
        }
    }

    // Resolve and check every face against the final counts.
    let has_uv = faces.first().is_some_and(|f| corners[f.start].vt.is_some());
    let mut triangles: Vec<[u32; 3]> = Vec::new();
    let mut corner_uvs: Vec<[Vec2; 3]> = Vec::new();
    for face in &faces {
        let fc = &corners[face.start..face.end];
        let with_uv = fc.iter().filter(|c| c.vt.is_some()).count();
        if with_uv != 0 && with_uv != fc.len() {
            return Err(err(
                face.line,
                "texture coordinates on some corners of the face only".into(),
            ));
        }
        if (with_uv != 0) != has_uv {
            let first = faces.first().map_or(face.line, |f| f.line);
            let message = if has_uv {
                format!("face without texture coordinates, but the face at line {first} has them")
            } else {
                format!("face with texture coordinates, but the face at line {first} has none")
            };
            return Err(err(face.line, message));
        }
        let mut idx = Vec::with_capacity(fc.len());
        let mut uv = Vec::with_capacity(fc.len());
        for c in fc {
            if c.v >= positions.len() as u64 {
                return Err(err(
                    face.line,
                    format!(
                        "vertex index {} out of range ({} vertices)",
                        c.v + 1,
                        positions.len()
                    ),
                ));
            }
            // In range of u32: positions.len() <= u32::MAX (checked when pushing).
            idx.push(c.v as u32);
            if let Some(t) = c.vt {
                if t >= uvs.len() as u64 {
                    return Err(err(
                        face.line,
                        format!(
                            "texture coordinate index {} out of range ({} defined)",
                            t + 1,
                            uvs.len()
                        ),
                    ));
                }
                uv.push(uvs[t as usize]);
            }
            if let Some(n) = c.vn
                && n >= num_normals as u64
            {
                return Err(err(
                    face.line,
                    format!(
                        "normal index {} out of range ({num_normals} defined)",
                        n + 1
                    ),
                ));
            }
        }
        for k in 1..idx.len() - 1 {
            triangles.push([idx[0], idx[k], idx[k + 1]]);
            triangle_lines.push(face.line);
            if has_uv {
                corner_uvs.push([uv[0], uv[k], uv[k + 1]]);
            }
        }
    }
    if triangles.len() > super::validate::MAX_TRIANGLES {
        let line = faces.last().map_or(0, |f| f.line);
        return Err(err(
            line,
            "more triangles than the u32 index range".to_owned(),
        ));
    }
    Ok((
        TriMesh {
            positions,
            triangles,
            corner_uvs: has_uv.then_some(corner_uvs),
        },
        ObjLines {
            file: file.to_owned(),
            vertices: vertex_lines,
            triangles: triangle_lines,
        },
    ))
}

/// Reads and parses the OBJ file at `path` (see [`read_obj`]); error messages name `path`.
///
/// Errors: [`MeshError::Io`] if the file cannot be read; [`MeshError::Obj`] for invalid UTF-8
/// (naming the line of the first bad byte) or any parse error.
pub fn read_obj_file(path: &Path) -> Result<TriMesh, MeshError> {
    read_obj_file_with_lines(path).map(|(mesh, _)| mesh)
}

/// [`read_obj_file`] and the line of every vertex and triangle ([`read_obj_with_lines`]).
pub fn read_obj_file_with_lines(path: &Path) -> Result<(TriMesh, ObjLines), MeshError> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| MeshError::Io {
        file: file.clone(),
        message: e.to_string(),
    })?;
    match std::str::from_utf8(&bytes) {
        Ok(text) => read_obj_with_lines(text, &file),
        Err(e) => {
            let line = 1 + bytes[..e.valid_up_to()]
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
            Err(MeshError::Obj {
                file,
                line,
                message: "invalid UTF-8".to_owned(),
            })
        }
    }
}

/// Writes `v` lines, optional per-vertex `vn` lines, and 1-based `f` lines (`f a//a b//b c//c`
/// when normals are given).
///
/// Floats are written with Rust's shortest round-trip formatting, so [`read_obj`] gives back the
/// same bits. Nothing is buffered here: pass a `BufWriter` for files.
///
/// Errors: `InvalidInput` (before anything is written) if `normals` is not as long as `positions`
/// or a triangle index is out of range; otherwise the writer's errors.
pub fn write_obj(
    w: &mut impl Write,
    positions: &[Vec3],
    normals: Option<&[Vec3]>,
    triangles: &[[u32; 3]],
) -> std::io::Result<()> {
    check_write_input(positions, normals, triangles)?;
    write_vertices(w, positions, normals)?;
    for t in triangles {
        let [a, b, c] = t.map(|i| u64::from(i) + 1);
        if normals.is_some() {
            writeln!(w, "f {a}//{a} {b}//{b} {c}//{c}")?;
        } else {
            writeln!(w, "f {a} {b} {c}")?;
        }
    }
    Ok(())
}

/// Writes a whole [`TriMesh`]: `v` lines and, if it has `corner_uvs`, one `vt` line per triangle
/// corner (in triangle order, so seams survive) and `f v/vt` lines; otherwise as [`write_obj`]
/// without normals. [`read_obj`] of the output gives back an equal mesh.
///
/// Errors: `InvalidInput` (before anything is written) for an out-of-range index or a
/// `corner_uvs` of the wrong length; otherwise the writer's errors.
pub fn write_obj_mesh(w: &mut impl Write, mesh: &TriMesh) -> std::io::Result<()> {
    let Some(uvs) = &mesh.corner_uvs else {
        return write_obj(w, &mesh.positions, None, &mesh.triangles);
    };
    check_write_input(&mesh.positions, None, &mesh.triangles)?;
    if uvs.len() != mesh.triangles.len() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "{} corner uv triples for {} triangles",
                uvs.len(),
                mesh.triangles.len()
            ),
        ));
    }
    write_vertices(w, &mesh.positions, None)?;
    for c in uvs {
        for uv in c {
            writeln!(w, "vt {} {}", uv.x, uv.y)?;
        }
    }
    for (t, tri) in mesh.triangles.iter().enumerate() {
        let [a, b, c] = tri.map(|i| u64::from(i) + 1);
        let k = 3 * t as u64;
        writeln!(w, "f {a}/{} {b}/{} {c}/{}", k + 1, k + 2, k + 3)?;
    }
    Ok(())
}

/// Area-weighted vertex normals of `positions` under `triangles`, into `out` (one per vertex):
/// the sum of the incident triangles' `(x1 - x0) × (x2 - x0)` (twice their area times their unit
/// normal), normalised; zero for a vertex on no triangle or only on degenerate ones.
///
/// Indices must be in range (as [`write_obj`] checks); an out-of-range index is skipped.
pub fn area_weighted_normals(positions: &[Vec3], triangles: &[[u32; 3]], out: &mut [Vec3]) {
    out.fill(Vec3::ZERO);
    for t in triangles {
        let (Some(&a), Some(&b), Some(&c)) = (
            positions.get(t[0] as usize),
            positions.get(t[1] as usize),
            positions.get(t[2] as usize),
        ) else {
            continue;
        };
        let n = (b - a).cross(c - a);
        for &i in t {
            if let Some(o) = out.get_mut(i as usize) {
                *o += n;
            }
        }
    }
    for n in out.iter_mut() {
        *n = n.normalize_or_zero();
    }
}

/// One named object of an OBJ file as [`write_obj_object`] writes it.
#[derive(Clone, Copy, Debug)]
pub struct ObjObject<'a> {
    /// The `o` name (written as given; whitespace would split it, so pass a sanitised name).
    pub name: &'a str,
    /// Vertex positions.
    pub positions: &'a [Vec3],
    /// Per-vertex normals (as long as `positions`), or none.
    pub normals: Option<&'a [Vec3]>,
    /// Texture (material) coordinates per triangle corner (as long as `triangles`), or none.
    pub corner_uvs: Option<&'a [[Vec2; 3]]>,
    /// Vertex indices of each triangle.
    pub triangles: &'a [[u32; 3]],
}

/// Writes `o <name>`, `v` lines, one `vt` line per triangle corner (if `corner_uvs`; in triangle
/// order, so seams survive), per-vertex `vn` lines (if `normals`) and `f` lines in the form the
/// data allows: `v/vt/vn`, `v/vt`, `v//vn` or `v`. [`read_obj`] of the output gives back the
/// positions, triangles and corner uvs bit for bit.
///
/// Errors: `InvalidInput` (before anything is written) for an out-of-range index or `normals` /
/// `corner_uvs` of the wrong length; otherwise the writer's errors.
pub fn write_obj_object(w: &mut impl Write, o: &ObjObject<'_>) -> std::io::Result<()> {
    check_write_input(o.positions, o.normals, o.triangles)?;
    if let Some(uvs) = o.corner_uvs
        && uvs.len() != o.triangles.len()
    {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "{} corner uv triples for {} triangles",
                uvs.len(),
                o.triangles.len()
            ),
        ));
    }
    writeln!(w, "o {}", o.name)?;
    for p in o.positions {
        writeln!(w, "v {} {} {}", p.x, p.y, p.z)?;
    }
    for c in o.corner_uvs.unwrap_or_default() {
        for uv in c {
            writeln!(w, "vt {} {}", uv.x, uv.y)?;
        }
    }
    for n in o.normals.unwrap_or_default() {
        writeln!(w, "vn {} {} {}", n.x, n.y, n.z)?;
    }
    let has_uv = o.corner_uvs.is_some();
    let has_n = o.normals.is_some();
    for (t, tri) in o.triangles.iter().enumerate() {
        write!(w, "f")?;
        for (k, &i) in tri.iter().enumerate() {
            let v = u64::from(i) + 1;
            let vt = 3 * t as u64 + k as u64 + 1;
            match (has_uv, has_n) {
                (true, true) => write!(w, " {v}/{vt}/{v}")?,
                (true, false) => write!(w, " {v}/{vt}")?,
                (false, true) => write!(w, " {v}//{v}")?,
                (false, false) => write!(w, " {v}")?,
            }
        }
        writeln!(w)?;
    }
    Ok(())
}

fn check_write_input(
    positions: &[Vec3],
    normals: Option<&[Vec3]>,
    triangles: &[[u32; 3]],
) -> std::io::Result<()> {
    let invalid = |m: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, m);
    if let Some(n) = normals
        && n.len() != positions.len()
    {
        return Err(invalid(format!(
            "{} normals for {} vertices",
            n.len(),
            positions.len()
        )));
    }
    if let Some((t, &i)) = triangles.iter().enumerate().find_map(|(t, tri)| {
        tri.iter()
            .find(|&&i| i as usize >= positions.len())
            .map(|i| (t, i))
    }) {
        return Err(invalid(format!(
            "face {t}: vertex index {i} out of range ({} vertices)",
            positions.len()
        )));
    }
    Ok(())
}

fn write_vertices(
    w: &mut impl Write,
    positions: &[Vec3],
    normals: Option<&[Vec3]>,
) -> std::io::Result<()> {
    for p in positions {
        writeln!(w, "v {} {} {}", p.x, p.y, p.z)?;
    }
    for n in normals.unwrap_or(&[]) {
        writeln!(w, "vn {} {} {}", n.x, n.y, n.z)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::{GridSpec, grid, icosphere};
    use proptest::prelude::*;

    fn obj_err(text: &str) -> (usize, String) {
        match read_obj(text, "test.obj") {
            Err(MeshError::Obj {
                file,
                line,
                message,
            }) => {
                assert_eq!(file, "test.obj");
                (line, message)
            }
            other => panic!("expected an Obj error for {text:?}, got {other:?}"),
        }
    }

    const SQUARE: &str = "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\n";

    #[test]
    fn triangles_and_quads_and_polygons_fan() {
        let m = read_obj(&format!("{SQUARE}f 1 2 3 4\n"), "q.obj").expect("valid");
        assert_eq!(m.triangles, vec![[0, 1, 2], [0, 2, 3]]);
        assert_eq!(m.corner_uvs, None);
        let text = format!("{SQUARE}v 0.5 1.5 0\nf 1 2 3 5 4\nf 1 2 3\n");
        let m = read_obj(&text, "p.obj").expect("valid");
        assert_eq!(
            m.triangles,
            vec![[0, 1, 2], [0, 2, 4], [0, 4, 3], [0, 1, 2]]
        );
        assert_eq!(m.positions.len(), 5);
        assert_eq!(m.positions[4], Vec3::new(0.5, 1.5, 0.0));
    }

    #[test]
    fn all_four_corner_forms() {
        let uv = "vt 0 0\nvt 2 0\nvt 2 2\nvt 0 2\nvn 0 0 1\n";
        let plain = read_obj(&format!("{SQUARE}{uv}f 1 2 3 4\n"), "a").expect("v");
        let with_vt = read_obj(&format!("{SQUARE}{uv}f 1/1 2/2 3/3 4/4\n"), "b").expect("v/vt");
        let with_vn =
            read_obj(&format!("{SQUARE}{uv}f 1//1 2//1 3//1 4//1\n"), "c").expect("v//vn");
        let all =
            read_obj(&format!("{SQUARE}{uv}f 1/1/1 2/2/1 3/3/1 4/4/1\n"), "d").expect("v/vt/vn");
        for m in [&plain, &with_vt, &with_vn, &all] {
            assert_eq!(m.triangles, vec![[0, 1, 2], [0, 2, 3]]);
        }
        assert_eq!(plain.corner_uvs, None);
        assert_eq!(with_vn.corner_uvs, None);
        let expected = Some(vec![
            [
                Vec2::new(0.0, 0.0),
                Vec2::new(2.0, 0.0),
                Vec2::new(2.0, 2.0),
            ],
            [
                Vec2::new(0.0, 0.0),
                Vec2::new(2.0, 2.0),
                Vec2::new(0.0, 2.0),
            ],
        ]);
        assert_eq!(with_vt.corner_uvs, expected);
        assert_eq!(all.corner_uvs, expected);
    }

    #[test]
    fn negative_indices_are_relative() {
        let text = "v 0 0 0\nv 1 0 0\nv 1 1 0\nvt 0 0\nvt 1 0\nvt 1 1\nf -3/-3 -2/-2 -1/-1\n\
                    v 0 1 0\nvt 0 1\nf 1/1 -2/-2 -1/-1\n";
        let m = read_obj(text, "neg.obj").expect("valid");
        assert_eq!(m.triangles, vec![[0, 1, 2], [0, 2, 3]]);
        let uvs = m.corner_uvs.expect("uvs");
        assert_eq!(
            uvs[1],
            [
                Vec2::new(0.0, 0.0),
                Vec2::new(1.0, 1.0),
                Vec2::new(0.0, 1.0)
            ]
        );
        // Reaching before the first vertex.
        let (line, msg) = obj_err("v 0 0 0\nv 1 0 0\nf -1 -2 -3\n");
        assert_eq!(line, 3);
        assert!(msg.contains("-3"), "{msg}");
    }

    #[test]
    fn comments_blanks_continuations_and_ignored_statements() {
        let text = "# a square\r\n\r\nmtllib x.mtl\no sq\ng group\ns off\nusemtl red\n\
                    v 0 0 0 # origin\nv 1 0 0 1.0\nv 1 1 0 1 0 0\n   \nv 0 1 0\n\
                    l 1 2\np 1\nvp 0.5\nf 1 2 \\\n 3 4 # continued\n";
        let m = read_obj(text, "c.obj").expect("valid");
        assert_eq!(m.positions.len(), 4);
        assert_eq!(m.triangles, vec![[0, 1, 2], [0, 2, 3]]);
        // An error after a continuation names the following physical lines correctly.
        let (line, _) = obj_err("v 0 0 \\\n 0\nv 1 0 0\nv 1 1 0\nf 1 2 x\n");
        assert_eq!(line, 5);
        // An error inside a continued line names its first physical line.
        let (line, _) = obj_err("v 0 0 0\nv 0 \\\n 0 zz\n");
        assert_eq!(line, 2);
    }

    #[test]
    fn forward_references_are_allowed() {
        let m = read_obj("f 1 2 3\nv 0 0 0\nv 1 0 0\nv 0 1 0\n", "fwd.obj").expect("valid");
        assert_eq!(m.triangles, vec![[0, 1, 2]]);
    }

    #[test]
    fn malformed_lines_name_the_line() {
        let cases: &[(&str, usize, &str)] = &[
            ("v 0 0 0\nv 1 x 0\n", 2, "not a number"),
            ("v 0 0\n", 1, "expected"),
            ("v 0 0 0 0 0\n", 1, "expected"),
            ("v 0 0 inf\n", 1, "not finite"),
            ("v 0 0 1e39\n", 1, "not finite"),
            ("vt 0\n", 1, "expected"),
            ("vn 0 0\n", 1, "expected"),
            ("v 0 0 0\nv 1 0 0\nv 0 1 0\n\nf 1 2 0\n", 5, "index 0"),
            ("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 4\n", 4, "out of range"),
            ("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2\n", 4, "at least 3"),
            (
                "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3.5\n",
                4,
                "not an integer",
            ),
            (
                "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 99999999999999999999\n",
                4,
                "not an integer",
            ),
            (
                "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 /3\n",
                4,
                "no vertex index",
            ),
            ("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1/ 2 3\n", 4, "empty texture"),
            ("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1/1/ 2 3\n", 4, "empty normal"),
            (
                "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1/1/1/1 2 3\n",
                4,
                "more than three",
            ),
            (
                "v 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0 0\nf 1/1 2/2 3/1\n",
                5,
                "texture coordinate index 2",
            ),
            (
                "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1//1 2//1 3//1\n",
                4,
                "normal index 1",
            ),
            (
                "v 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0 0\nf 1/1 2 3\n",
                5,
                "some corners",
            ),
        ];
        for &(text, line, needle) in cases {
            let (l, msg) = obj_err(text);
            assert_eq!(l, line, "{text:?}: {msg}");
            assert!(msg.contains(needle), "{text:?}: {msg:?} lacks {needle:?}");
        }
    }

    #[test]
    fn mixed_texture_coordinates_name_the_differing_face() {
        let base = "v 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0 0\nvt 1 0\nvt 0 1\n";
        let (line, msg) = obj_err(&format!("{base}f 1/1 2/2 3/3\nf 1 3 2\n"));
        assert_eq!(line, 8);
        assert!(msg.contains("line 7"), "{msg}");
        let (line, msg) = obj_err(&format!("{base}f 1 2 3\n# x\nf 1/1 3/3 2/2\n"));
        assert_eq!(line, 9);
        assert!(msg.contains("line 7"), "{msg}");
    }

    #[test]
    fn error_message_names_file_and_line() {
        let e = read_obj("v 0 0 0\nf 1 2 3\n", "cloth.obj").unwrap_err();
        assert!(e.to_string().starts_with("cloth.obj:2:"), "{e}");
    }

    #[test]
    fn no_faces_gives_empty_mesh() {
        let m = read_obj("# nothing\nv 1 2 3\n", "e.obj").expect("not a parse error");
        assert!(m.triangles.is_empty());
        assert_eq!(m.validate(), Err(MeshError::Empty));
        assert_eq!(
            read_obj("", "e.obj").expect("empty text").positions.len(),
            0
        );
    }

    #[test]
    fn write_read_round_trip() {
        let m = icosphere(0.37, 2).expect("valid");
        let normals: Vec<Vec3> = m.positions.iter().map(|p| p.normalize()).collect();
        for n in [None, Some(normals.as_slice())] {
            let mut buf = Vec::new();
            write_obj(&mut buf, &m.positions, n, &m.triangles).expect("write to Vec");
            let text = String::from_utf8(buf).expect("utf-8");
            assert_eq!(
                text.lines().filter(|l| l.starts_with("vn ")).count(),
                n.map_or(0, <[_]>::len)
            );
            let back = read_obj(&text, "rt.obj").expect("own output parses");
            assert_eq!(back, m, "bit-exact round trip");
        }
    }

    #[test]
    fn write_read_round_trip_with_uvs() {
        let m = grid(&GridSpec {
            nx: 5,
            ny: 4,
            ..GridSpec::default()
        })
        .expect("valid");
        let mut buf = Vec::new();
        write_obj_mesh(&mut buf, &m).expect("write to Vec");
        let back = read_obj(std::str::from_utf8(&buf).expect("utf-8"), "rt.obj").expect("parses");
        assert_eq!(back, m);
    }

    #[test]
    fn object_round_trip_with_normals_and_uvs() {
        let m = grid(&GridSpec {
            nx: 6,
            ny: 5,
            ..GridSpec::default()
        })
        .expect("valid");
        let mut x = m.positions.clone();
        for (i, p) in x.iter_mut().enumerate() {
            p.z += 0.01 * (i as f32).sin();
        }
        let mut normals = vec![Vec3::ZERO; x.len()];
        area_weighted_normals(&x, &m.triangles, &mut normals);
        for uvs in [m.corner_uvs.as_deref(), None] {
            let mut buf = Vec::new();
            let o = ObjObject {
                name: "sheet",
                positions: &x,
                normals: Some(&normals),
                corner_uvs: uvs,
                triangles: &m.triangles,
            };
            write_obj_object(&mut buf, &o).expect("write to Vec");
            let text = String::from_utf8(buf).expect("utf-8");
            assert!(text.starts_with("o sheet\n"));
            let back = read_obj(&text, "o.obj").expect("own output parses");
            assert_eq!(back.positions, x);
            assert_eq!(back.triangles, m.triangles);
            assert_eq!(back.corner_uvs.as_deref(), uvs);
            let vn: Vec<Vec3> = text
                .lines()
                .filter_map(|l| l.strip_prefix("vn "))
                .map(|l| {
                    let c: Vec<f32> = l.split(' ').map(|t| t.parse().expect("float")).collect();
                    Vec3::new(c[0], c[1], c[2])
                })
                .collect();
            assert_eq!(vn.len(), x.len());
            assert!(vn.iter().all(|n| (n.length() - 1.0).abs() < 1e-6));
        }
    }

    #[test]
    fn area_weighted_normals_of_a_bent_pair() {
        // Two triangles folded along x: the shared vertices average the two faces by area.
        let x = [Vec3::ZERO, Vec3::X, Vec3::Y, 2.0 * Vec3::NEG_Z];
        let tris = [[0, 1, 2], [0, 1, 3]];
        let mut n = [Vec3::ONE; 4];
        area_weighted_normals(&x, &tris, &mut n);
        assert!((n[2] - Vec3::Z).length() < 1e-6);
        assert!((n[3] - Vec3::Y).length() < 1e-6);
        // Face 2 has twice the area: the shared normal leans towards +y.
        let expect = (Vec3::Z + 2.0 * Vec3::Y).normalize();
        assert!((n[0] - expect).length() < 1e-6, "{}", n[0]);
        assert!((n[1] - expect).length() < 1e-6);
        let e = write_obj_object(
            &mut Vec::new(),
            &ObjObject {
                name: "x",
                positions: &x,
                normals: None,
                corner_uvs: Some(&[]),
                triangles: &tris,
            },
        )
        .unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    }

    #[test]
    fn write_rejects_bad_input() {
        let p = [Vec3::ZERO, Vec3::X, Vec3::Y];
        let mut buf = Vec::new();
        let e = write_obj(&mut buf, &p, None, &[[0, 1, 3]]).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
        assert!(e.to_string().contains("face 0"));
        let e = write_obj(&mut buf, &p, Some(&[Vec3::Z]), &[[0, 1, 2]]).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
        assert!(buf.is_empty(), "nothing written on invalid input");
        let mut m = TriMesh {
            positions: p.to_vec(),
            triangles: vec![[0, 1, 2]],
            corner_uvs: Some(vec![]),
        };
        assert!(write_obj_mesh(&mut buf, &m).is_err());
        m.corner_uvs = None;
        write_obj_mesh(&mut buf, &m).expect("valid");
        assert_eq!(
            String::from_utf8(buf).expect("utf-8"),
            "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n"
        );
    }

    #[test]
    fn read_obj_file_errors_name_the_file() {
        let dir = std::env::temp_dir().join(format!("weft-mesh-obj-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let missing = dir.join("missing.obj");
        match read_obj_file(&missing) {
            Err(e @ MeshError::Io { .. }) => assert!(e.to_string().contains("missing.obj"), "{e}"),
            other => panic!("expected Io, got {other:?}"),
        }
        let bad = dir.join("bad.obj");
        std::fs::write(&bad, b"v 0 0 0\nv 1 0 0\nv \xff 1 0\n").expect("write");
        match read_obj_file(&bad) {
            Err(MeshError::Obj { file, line, .. }) => {
                assert!(file.ends_with("bad.obj"));
                assert_eq!(line, 3);
            }
            other => panic!("expected Obj, got {other:?}"),
        }
        let good = dir.join("good.obj");
        std::fs::write(&good, format!("{SQUARE}f 1 2 3 4\n")).expect("write");
        assert_eq!(read_obj_file(&good).expect("valid").triangles.len(), 2);
        std::fs::remove_dir_all(&dir).expect("clean up");
    }

    /// Lines built from OBJ-like tokens, to reach deep into the parser.
    fn obj_line() -> impl Strategy<Value = String> {
        let token = prop_oneof![
            Just("v".to_owned()),
            Just("vt".to_owned()),
            Just("vn".to_owned()),
            Just("f".to_owned()),
            Just("#".to_owned()),
            Just("\\".to_owned()),
            Just("/".to_owned()),
            Just("//".to_owned()),
            any::<i64>().prop_map(|i| i.to_string()),
            (-5i32..6).prop_map(|i| i.to_string()),
            (-4i32..5, -4i32..5).prop_map(|(a, b)| format!("{a}/{b}")),
            (-4i32..5, -4i32..5, -4i32..5).prop_map(|(a, b, c)| format!("{a}/{b}/{c}")),
            (-4i32..5, -4i32..5).prop_map(|(a, c)| format!("{a}//{c}")),
            any::<f32>().prop_map(|x| x.to_string()),
            "[ -~]{0,6}",
        ];
        prop::collection::vec(token, 0..8).prop_map(|t| t.join(" "))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn random_text_never_panics(text in "\\PC{0,400}") {
            let _ = read_obj(&text, "fuzz.obj");
        }

        #[test]
        fn random_lines_never_panic(lines in prop::collection::vec(obj_line(), 0..30)) {
            let text = lines.join("\n");
            match read_obj(&text, "fuzz.obj") {
                Ok(m) => {
                    // Whatever parses is index-consistent.
                    prop_assert!(m.triangles.iter().flatten().all(|&i| (i as usize) < m.positions.len()));
                    if let Some(uvs) = &m.corner_uvs {
                        prop_assert_eq!(uvs.len(), m.triangles.len());
                    }
                }
                Err(MeshError::Obj { line, .. }) => {
                    prop_assert!(line >= 1 && line <= lines.len().max(1));
                }
                Err(e) => prop_assert!(false, "unexpected error kind {e:?}"),
            }
        }
    }
}
