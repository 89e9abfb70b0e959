//! One collision stage shared by several cloths (`docs/methods/cloth-layers.md`): their meshes
//! concatenated into one vertex space (member by member, in the order given), so repulsion,
//! friction, CCD, impact zones and the last resort treat every cloth triangle alike, as
//! Bridson et al. 2002 §5–§7 treat the triangles of one cloth.
//!
//! What differs from one cloth is per member: masses (per vertex already), the Coulomb
//! coefficient of the surface (per vertex, so a pair's coefficient is the geometric mean of its
//! two sides' as for cloth–obstacle pairs), the thickness (per vertex, as an excess over the
//! thinnest member: a pair keeps the larger of its sides' thicknesses), and which members meet
//! (a member's own triangles when its self-collision is on; two members unless one was told not
//! to collide with the other).
#![deny(unsafe_code)]

use super::*;

/// One member of a shared stage: its mesh (vertex indices local to it) and positions now.
#[derive(Clone, Copy, Debug)]
pub struct MemberMesh<'a> {
    /// The member's triangles.
    pub triangles: &'a [[u32; 3]],
    /// Its unique sorted edges.
    pub edges: &'a [[u32; 2]],
    /// Their rest lengths (m).
    pub rest_lengths: &'a [f32],
    /// Its positions now.
    pub positions: &'a [Vec3],
}

/// What the shared stage reads per member each substep.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MemberSettings {
    /// Thickness η of the member (m).
    pub thickness: f32,
    /// Coulomb coefficient of its surface.
    pub friction: f32,
    /// Its own triangles meet each other.
    pub self_collision: bool,
}

/// The members of a shared stage: where each one's vertices and triangles are, and which meet.
#[derive(Debug)]
pub(super) struct Members {
    /// Per member its first vertex; one more entry (the number of cloth vertices).
    vertex_starts: Vec<u32>,
    /// Per cloth triangle its member.
    tri_member: Vec<u32>,
    /// `meets[a * k + b]`: members `a` and `b` collide (`a == b`: self-collision).
    meets: Vec<bool>,
    /// Per cloth vertex: its member does not meet itself.
    apart: Vec<bool>,
}

impl Members {
    /// Whether cloth triangles `a` and `b` of the shared space may collide.
    #[inline]
    pub(super) fn triangles_meet(&self, a: u32, b: u32) -> bool {
        let k = self.vertex_starts.len() - 1;
        let (ma, mb) = (
            self.tri_member[a as usize] as usize,
            self.tri_member[b as usize] as usize,
        );
        self.meets[ma * k + mb]
    }

    /// Per cloth vertex: its member's self-collision is off.
    pub(super) fn apart_from_self(&self) -> &[bool] {
        &self.apart
    }

    fn count(&self) -> usize {
        self.vertex_starts.len() - 1
    }
}

impl ClothCollision {
    /// Builds the collision data of a stage shared by `members` (at least one), their vertex
    /// spaces concatenated in the order given. Every member meets every other until
    /// [`ClothCollision::set_members`] says otherwise. No obstacle meshes yet.
    #[must_use]
    pub fn new_shared(members: &[MemberMesh<'_>]) -> Self {
        let mut triangles = Vec::new();
        let mut edges = Vec::new();
        let mut rest_lengths = Vec::new();
        let mut positions = Vec::new();
        let mut vertex_starts = Vec::with_capacity(members.len() + 1);
        let mut tri_member = Vec::new();
        for (k, m) in members.iter().enumerate() {
            let base = positions.len() as u32;
            vertex_starts.push(base);
            triangles.extend(m.triangles.iter().map(|t| t.map(|i| i + base)));
            tri_member.extend(std::iter::repeat_n(k as u32, m.triangles.len()));
            // Each member's edges are sorted and its vertices follow the earlier members', so
            // the concatenation stays sorted and unique.
            edges.extend(m.edges.iter().map(|e| e.map(|i| i + base)));
            rest_lengths.extend_from_slice(m.rest_lengths);
            positions.extend_from_slice(m.positions);
        }
        vertex_starts.push(positions.len() as u32);
        let mut collision = ClothCollision::new(&triangles, &edges, &rest_lengths, &positions);
        let k = members.len();
        collision.members = Some(Members {
            vertex_starts,
            tri_member,
            meets: vec![true; k * k],
            apart: vec![false; positions.len()],
        });
        collision
    }

    /// Number of members of a shared stage (1 for one cloth's own stage).
    #[must_use]
    pub fn member_count(&self) -> usize {
        self.members.as_ref().map_or(1, Members::count)
    }

    /// Sets what the stage reads per member (`settings`, one per member in member order) and
    /// which pairs of members meet (`apart(a, b)`: true when members `a < b` must not collide).
    /// The stage's own [`CollisionSettings::thickness`] must then be the smallest member
    /// thickness: each member's excess over it is added to its vertices' pairs, so a pair is
    /// close within the larger of its sides' thicknesses. Writes buffers sized at creation
    /// only (no allocation). Panics when the number of settings is not the number of members.
    pub fn set_members(
        &mut self,
        settings: &[MemberSettings],
        apart: impl Fn(usize, usize) -> bool,
    ) {
        let Some(m) = self.members.as_mut() else {
            return;
        };
        let k = m.count();
        assert_eq!(settings.len(), k, "set_members: one setting per member");
        let thinnest = settings
            .iter()
            .map(|s| s.thickness)
            .fold(f32::INFINITY, f32::min);
        let mut max_extra = 0.0f32;
        for (a, s) in settings.iter().enumerate() {
            let range = m.vertex_starts[a] as usize..m.vertex_starts[a + 1] as usize;
            let extra = s.thickness - thinnest;
            max_extra = max_extra.max(extra);
            self.extra_thickness[range.clone()].fill(extra);
            self.surface_friction[range.clone()].fill(s.friction);
            m.apart[range].fill(!s.self_collision);
            for b in 0..k {
                m.meets[a * k + b] = if a == b {
                    s.self_collision
                } else {
                    !apart(a.min(b), a.max(b))
                };
            }
        }
        self.max_cloth_extra = max_extra;
    }

    /// Member `k`'s vertices in the shared space.
    #[must_use]
    pub fn member_vertices(&self, k: usize) -> std::ops::Range<usize> {
        match &self.members {
            Some(m) => m.vertex_starts[k] as usize..m.vertex_starts[k + 1] as usize,
            None => 0..self.n,
        }
    }
}
