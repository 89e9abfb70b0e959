//! A single-file animated mesh cache in USD's text form (`.usda`), which Blender, Houdini, Maya
//! and Omniverse open.
//!
//! Layout: one `Xform` root prim (the default prim) holding one `Mesh` prim per mesh, with
//! `faceVertexCounts` / `faceVertexIndices` once, and `points` and `normals` (per vertex,
//! area-weighted) as time samples when the mesh is animated, as plain values when it is static.
//! Texture (material) coordinates, per triangle corner, are `primvars:st` with `faceVarying`
//! interpolation, once (they do not change with time). Time codes are frame numbers, and
//! `timeCodesPerSecond` is the frame rate.
//!
//! Memory: USDA holds all time samples of an attribute in one dictionary inside its prim, so a
//! file cannot be written frame by frame in one pass. The cache keeps the samples as `f32`s
//! (24 bytes per vertex and frame: point and normal) and writes the text at the end; 180 frames of
//! a 65 × 65 cloth are 18 MB. Spilling each attribute to its own temporary file would bound memory
//! for longer caches at the cost of a second pass over the disk.
#![deny(unsafe_code)]

use std::io::Write;

use glam::{Vec2, Vec3};

use super::obj::area_weighted_normals;

/// One mesh of a [`UsdaCache`].
#[derive(Clone, Debug)]
struct CacheMesh {
    name: String,
    vertices: usize,
    triangles: Vec<[u32; 3]>,
    corner_uvs: Option<Vec<[Vec2; 3]>>,
    animated: bool,
    /// `vertices` points per sample, samples in time order.
    points: Vec<Vec3>,
    normals: Vec<Vec3>,
}

/// An animated USD cache being recorded; [`UsdaCache::write`] writes it.
#[derive(Clone, Debug)]
pub struct UsdaCache {
    fps: f32,
    root: String,
    meshes: Vec<CacheMesh>,
    times: Vec<u64>,
}

/// `name` as a USD prim name: `[A-Za-z_][A-Za-z0-9_]*` (other characters become `_`, a leading
/// digit or an empty name gets a `_` in front).
#[must_use]
pub fn prim_name(name: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if s.chars().next().is_none_or(|c| c.is_ascii_digit()) {
        s.insert(0, '_');
    }
    s
}

fn invalid(m: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, m)
}

impl UsdaCache {
    /// An empty cache at `fps` time codes per second, its meshes under the root prim `root`.
    #[must_use]
    pub fn new(root: &str, fps: f32) -> Self {
        Self {
            fps,
            root: prim_name(root),
            meshes: Vec::new(),
            times: Vec::new(),
        }
    }

    /// Adds a mesh of `vertices` vertices; returns its index for [`UsdaCache::sample`]. Its prim
    /// name is [`prim_name`] of `name`, made unique with a `_<k>` suffix. An `animated` mesh
    /// takes one sample per time code; a static one exactly one sample.
    ///
    /// Errors: `InvalidInput` for an index out of range or `corner_uvs` of the wrong length.
    pub fn add_mesh(
        &mut self,
        name: &str,
        vertices: usize,
        triangles: &[[u32; 3]],
        corner_uvs: Option<&[[Vec2; 3]]>,
        animated: bool,
    ) -> std::io::Result<usize> {
        if let Some(t) = triangles
            .iter()
            .position(|t| t.iter().any(|&i| i as usize >= vertices))
        {
            return Err(invalid(format!(
                "{name}: triangle {t} has a vertex index out of range ({vertices} vertices)"
            )));
        }
        if let Some(uv) = corner_uvs
            && uv.len() != triangles.len()
        {
            return Err(invalid(format!(
                "{name}: {} corner uv triples for {} triangles",
                uv.len(),
                triangles.len()
            )));
        }
        let base = prim_name(name);
        let mut unique = base.clone();
        let mut k = 1;
        while self.meshes.iter().any(|m| m.name == unique) {
            unique = format!("{base}_{k}");
            k += 1;
        }
        self.meshes.push(CacheMesh {
            name: unique,
            vertices,
            triangles: triangles.to_vec(),
            corner_uvs: corner_uvs.map(<[_]>::to_vec),
            animated,
            points: Vec::new(),
            normals: Vec::new(),
        });
        Ok(self.meshes.len() - 1)
    }

    /// Starts time code `time` (frame number; increasing): every animated mesh then takes one
    /// [`UsdaCache::sample`].
    ///
    /// Errors: `InvalidInput` if `time` is not after the previous time code.
    pub fn begin_time(&mut self, time: u64) -> std::io::Result<()> {
        if self.times.last().is_some_and(|&t| t >= time) {
            return Err(invalid(format!("time code {time} is not increasing")));
        }
        self.times.push(time);
        Ok(())
    }

    /// Records the positions of mesh `mesh` (world space) at the current time code (a static
    /// mesh: its only sample) and their area-weighted normals.
    ///
    /// Errors: `InvalidInput` for an unknown mesh, a wrong number of positions, or a sample
    /// the mesh already has.
    pub fn sample(&mut self, mesh: usize, positions: &[Vec3]) -> std::io::Result<()> {
        let samples = self.times.len();
        let m = self
            .meshes
            .get_mut(mesh)
            .ok_or_else(|| invalid(format!("no mesh {mesh}")))?;
        if positions.len() != m.vertices {
            return Err(invalid(format!(
                "{}: {} positions for {} vertices",
                m.name,
                positions.len(),
                m.vertices
            )));
        }
        let have = m.points.len() / m.vertices.max(1);
        let allowed = if m.animated { samples } else { 1 };
        if have >= allowed {
            return Err(invalid(format!(
                "{}: a sample for this time code exists already",
                m.name
            )));
        }
        let start = m.normals.len();
        m.points.extend_from_slice(positions);
        m.normals.resize(start + positions.len(), Vec3::ZERO);
        area_weighted_normals(positions, &m.triangles, &mut m.normals[start..]);
        Ok(())
    }

    /// Writes the cache as USDA text.
    ///
    /// Errors: `InvalidInput` (before anything is written) if a mesh misses samples: an animated
    /// one not sampled at every time code, a static one never; otherwise the writer's errors.
    pub fn write(&self, w: &mut impl Write) -> std::io::Result<()> {
        for m in &self.meshes {
            let want = if m.animated { self.times.len() } else { 1 };
            if m.points.len() != want * m.vertices {
                return Err(invalid(format!(
                    "{}: {} samples of {} vertices recorded, {want} needed",
                    m.name,
                    m.points.len() / m.vertices.max(1),
                    m.vertices
                )));
            }
        }
        let start = self.times.first().copied().unwrap_or(0);
        let end = self.times.last().copied().unwrap_or(start);
        writeln!(w, "#usda 1.0")?;
        writeln!(w, "(")?;
        writeln!(w, "    defaultPrim = \"{}\"", self.root)?;
        writeln!(w, "    doc = \"weft cloth cache\"")?;
        writeln!(w, "    startTimeCode = {start}")?;
        writeln!(w, "    endTimeCode = {end}")?;
        writeln!(w, "    timeCodesPerSecond = {}", self.fps)?;
        writeln!(w, "    framesPerSecond = {}", self.fps)?;
        writeln!(w, "    metersPerUnit = 1")?;
        writeln!(w, "    upAxis = \"Y\"")?;
        writeln!(w, ")")?;
        writeln!(w)?;
        writeln!(w, "def Xform \"{}\"", self.root)?;
        writeln!(w, "{{")?;
        for m in &self.meshes {
            self.write_mesh(w, m)?;
        }
        writeln!(w, "}}")?;
        Ok(())
    }

    fn write_mesh(&self, w: &mut impl Write, m: &CacheMesh) -> std::io::Result<()> {
        writeln!(w, "    def Mesh \"{}\"", m.name)?;
        writeln!(w, "    {{")?;
        writeln!(w, "        uniform token orientation = \"rightHanded\"")?;
        writeln!(w, "        uniform token subdivisionScheme = \"none\"")?;
        write!(w, "        int[] faceVertexCounts = [")?;
        for t in 0..m.triangles.len() {
            write!(w, "{}3", if t == 0 { "" } else { ", " })?;
        }
        writeln!(w, "]")?;
        write!(w, "        int[] faceVertexIndices = [")?;
        for (t, [a, b, c]) in m.triangles.iter().enumerate() {
            write!(w, "{}{a}, {b}, {c}", if t == 0 { "" } else { ", " })?;
        }
        writeln!(w, "]")?;
        write_vec3s(w, "point3f[] points", m, &m.points, &self.times)?;
        writeln!(w, "        normal3f[] normals (")?;
        writeln!(w, "            interpolation = \"vertex\"")?;
        writeln!(w, "        )")?;
        write_vec3s(w, "normal3f[] normals", m, &m.normals, &self.times)?;
        if let Some(uvs) = &m.corner_uvs {
            write!(w, "        texCoord2f[] primvars:st = [")?;
            for (k, uv) in uvs.iter().flatten().enumerate() {
                write!(w, "{}({}, {})", if k == 0 { "" } else { ", " }, uv.x, uv.y)?;
            }
            writeln!(w, "] (")?;
            writeln!(w, "            interpolation = \"faceVarying\"")?;
            writeln!(w, "        )")?;
        }
        writeln!(w, "    }}")?;
        Ok(())
    }
}

/// `decl = [...]` for a static mesh, `decl.timeSamples = { t: [...], ... }` for an animated one.
fn write_vec3s(
    w: &mut impl Write,
    decl: &str,
    m: &CacheMesh,
    values: &[Vec3],
    times: &[u64],
) -> std::io::Result<()> {
    let list = |w: &mut dyn Write, xs: &[Vec3]| -> std::io::Result<()> {
        write!(w, "[")?;
        for (k, p) in xs.iter().enumerate() {
            write!(
                w,
                "{}({}, {}, {})",
                if k == 0 { "" } else { ", " },
                p.x,
                p.y,
                p.z
            )?;
        }
        write!(w, "]")
    };
    if m.animated {
        writeln!(w, "        {decl}.timeSamples = {{")?;
        for (t, xs) in times.iter().zip(values.chunks(m.vertices.max(1))) {
            write!(w, "            {t}: ")?;
            list(w, xs)?;
            writeln!(w, ",")?;
        }
        writeln!(w, "        }}")?;
    } else {
        write!(w, "        {decl} = ")?;
        list(w, values)?;
        writeln!(w)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quad() -> (Vec<Vec3>, Vec<[u32; 3]>) {
        (
            vec![Vec3::ZERO, Vec3::X, Vec3::new(1.0, 0.0, -1.0), Vec3::NEG_Z],
            vec![[0, 1, 2], [0, 2, 3]],
        )
    }

    #[test]
    fn writes_time_samples_for_animated_and_values_for_static_meshes() {
        let (x, tris) = quad();
        let uvs = [
            [Vec2::ZERO, Vec2::X, Vec2::ONE],
            [Vec2::ZERO, Vec2::ONE, Vec2::Y],
        ];
        let mut c = UsdaCache::new("weft", 30.0);
        let a = c
            .add_mesh("cloth 1", 4, &tris, Some(&uvs), true)
            .expect("valid");
        let s = c.add_mesh("cloth 1", 4, &tris, None, false).expect("valid");
        c.sample(s, &x).expect("static sample");
        for f in 0..3u64 {
            c.begin_time(f).expect("increasing");
            let y: Vec<Vec3> = x.iter().map(|p| *p + Vec3::Y * f as f32).collect();
            c.sample(a, &y).expect("sample");
            assert!(c.sample(a, &y).is_err(), "one sample per time code");
        }
        assert!(c.sample(s, &x).is_err(), "a static mesh takes one sample");
        assert!(c.begin_time(2).is_err());
        let mut buf = Vec::new();
        c.write(&mut buf).expect("write");
        let text = String::from_utf8(buf).expect("utf-8");
        assert!(text.contains("def Mesh \"cloth_1\""), "{text}");
        assert!(text.contains("def Mesh \"cloth_1_1\""), "{text}");
        assert!(text.contains("timeCodesPerSecond = 30"));
        assert!(text.contains("endTimeCode = 2"));
        assert!(text.contains("2: [(0, 2, 0), (1, 2, 0), (1, 2, -1), (0, 2, -1)],"));
        assert!(text.contains("point3f[] points = [(0, 0, 0), (1, 0, 0)"));
        assert!(text.contains("normal3f[] normals = [(0, 1, 0), (0, 1, 0)"));
        assert!(text.contains("primvars:st = [(0, 0), (1, 0), (1, 1), (0, 0)"));
        assert_eq!(text.matches("points.timeSamples").count(), 1);
    }

    #[test]
    fn missing_samples_and_bad_meshes_are_refused() {
        let (x, tris) = quad();
        let mut c = UsdaCache::new("9 root", 60.0);
        assert!(c.add_mesh("m", 3, &tris, None, true).is_err());
        assert!(c.add_mesh("m", 4, &tris, Some(&[]), true).is_err());
        let a = c.add_mesh("m", 4, &tris, None, true).expect("valid");
        c.begin_time(0).expect("first");
        c.sample(a, &x).expect("sample");
        assert!(c.sample(a, &x[..3]).is_err());
        c.begin_time(1).expect("second");
        let mut buf = Vec::new();
        assert!(c.write(&mut buf).is_err(), "frame 1 has no sample");
        assert!(buf.is_empty());
        assert_eq!(prim_name("9 root"), "_9_root");
        assert_eq!(prim_name(""), "_");
    }
}
