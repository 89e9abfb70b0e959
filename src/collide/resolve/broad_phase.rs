//! The collision stage's broad phase: one search per substep over boxes swept through the
//! substep, and the searches of later rounds that only re-query what changed.
#![deny(unsafe_code)]

use super::detect::{
    BOUND_SLACK, ccd_limit, f32_above, f32_at_most, largest_coordinate, screened_bounds,
    screened_closing,
};
use super::reference_bounds::ReferenceView;
use super::*;
use crate::linalg::reduce::for_each_chunk;
use crate::runtime::executor::parallel_here;

impl ClothCollision {
    /// The substep's one full search: fills `candidates` with every point–triangle and edge–edge
    /// test of overlapping triangle pairs that can pass proximity at x^n (within η, or the pair's
    /// η with obstacle thickness) or CCD over the substep at the current velocities (within η_c)
    /// ([`Reach::Substep`]). The repulsion tests the list at x^n, the first CCD round the same
    /// list over the substep; later searches only add what changed ([`ClothCollision::update_candidates`]).
    ///
    /// Triangle pairs come from the trees over triangle boxes: each vertex's box is its segment
    /// from x^n to x^n + h v (so one box serves both reaches), a triangle's box is its vertices'
    /// boxes inflated by η. A pair's tests are then culled feature by feature with the same box
    /// bounds detection starts from ([`margin`], [`near`], [`swept_near`]): a point–triangle test
    /// only if the point's box meets the triangle's box grown by the point–triangle margin, an
    /// edge–edge test only if the two edges' boxes are within the edge–edge margin. Both bounds
    /// are necessary for detection, so the culled tests are exactly tests that could not have been
    /// found at the velocities this list is built from. Topological neighbours are not a case of
    /// their own: triangles sharing a vertex overlap, and their tests without a shared vertex are
    /// emitted (a fold through a neighbour is caught); tests sharing a vertex are skipped.
    pub(super) fn find_candidates(
        &mut self,
        candidates: &mut ArenaVec<'_, Candidate>,
        settings: &CollisionSettings,
        reach: Reach,
        stats: &mut CollisionStats,
    ) {
        candidates.clear();
        // The substep's search serves the stages that meet curved colliders analytically.
        let analytic = reach == Reach::Substep;
        self.search(candidates, settings, reach, false, analytic, stats);
    }

    /// Brings the list of the previous search up to the current velocities, re-querying only
    /// what changed (Bridson et al. 2002 §5 recalculates the hierarchy for each iteration of the collision algorithm; a test none of
    /// whose vertices changed has the boxes it had, so only tests with a changed vertex can enter
    /// or leave the list). Keeps the tests of `candidates` without a vertex marked in
    /// `self.changed`, then appends the tests with one, found by querying the trees with the
    /// cloth triangles holding a changed vertex ([`self_pairs_of`], [`cross_pairs_of`]) and
    /// culled at `reach`. The result is the list a full search at `reach` would give (up to the
    /// looser cull the kept tests had), in a fixed order: kept tests in their order, then the
    /// new ones in query order.
    ///
    /// `scratch` holds, per listed test, whether it is kept: set in parallel chunks
    /// ([`detect_parallel`]), then the kept tests are moved down in order on the calling thread
    /// (what `retain` does, without its per-test look-ups of the changed vertices).
    pub(super) fn update_candidates(
        &mut self,
        candidates: &mut ArenaVec<'_, Candidate>,
        scratch: &mut ArenaVec<'_, bool>,
        settings: &CollisionSettings,
        reach: Reach,
        stats: &mut CollisionStats,
    ) {
        let changed = &self.changed;
        stats.pool_grew |= detect_parallel(candidates, scratch, |c| {
            !c.verts.iter().any(|&i| changed[i as usize])
        });
        let mut kept = 0;
        for k in 0..candidates.len() {
            if scratch[k] {
                candidates[kept] = candidates[k];
                kept += 1;
            }
        }
        candidates.truncate(kept);
        self.changed_tris.clear();
        for (t, (tri, flag)) in self.tris.iter().zip(&mut self.tri_changed).enumerate() {
            *flag = tri.iter().any(|&i| changed[i as usize]);
            if *flag {
                self.changed_tris.push(t as u32);
            }
        }
        if self.changed_tris.is_empty() {
            return;
        }
        self.search(candidates, settings, reach, true, true, stats);
    }

    /// The search behind [`ClothCollision::find_candidates`] and
    /// [`ClothCollision::update_candidates`]: boxes at `reach`, refit trees, triangle pairs (all,
    /// or those of the changed triangles when `incremental`), their tests appended to
    /// `candidates` (when `incremental`, only tests with a changed vertex). With `analytic`, the
    /// tessellations of the colliders met through their exact surface are left out.
    ///
    /// The boxes come in layers ([`LayerBoxes`]), one per reach a search serves: the swept layer
    /// (x^n to x^n + h v, CCD's η_c) always, the layer at x^n (proximity's η, plus obstacle
    /// thickness) for [`Reach::Substep`]. The trees hold the union of the layers' triangle boxes;
    /// a test is kept when the cull of one layer passes it, so the list holds every test either
    /// detection could find, and few others: boxes swept through the substep *and* grown by the
    /// proximity margin would keep many times more.
    fn search(
        &mut self,
        candidates: &mut ArenaVec<'_, Candidate>,
        settings: &CollisionSettings,
        reach: Reach,
        incremental: bool,
        analytic: bool,
        stats: &mut CollisionStats,
    ) {
        let n = self.n;
        let eta = settings.thickness;
        let extra = self.max_extra_thickness;
        let eta_c = f64::from(eta) * CCD_TOLERANCE_FRACTION;
        // The largest η of a cloth–cloth pair at x^n: η itself for one cloth, the thickest
        // member's for a stage shared by several ([`Members`]).
        let eta_cloth = eta + self.max_cloth_extra;
        // Per layer: inflation of the triangle boxes, and the margins of detection's pre-tests
        // for cloth–cloth and cloth–obstacle pairs.
        let swept = (
            0.5 * eta_c as f32,
            FeatureMargins::of(eta_c),
            FeatureMargins::of(eta_c),
        );
        let at_start = (
            eta_cloth,
            FeatureMargins::of(f64::from(eta_cloth)),
            FeatureMargins::of(f64::from(eta_cloth + extra)),
        );
        let num_layers = match reach {
            Reach::Substep => 2,
            Reach::Swept => 1,
        };
        let settings_of = [swept, at_start];
        // When every obstacle triangle belongs to a curved collider met through its exact surface
        // (the drape's sphere), the searches of the repulsion and the CCD rounds have nothing to
        // find among them: their boxes, tree and pairs are skipped, not computed and emptied.
        let all_left_out =
            analytic && !self.leave_out.is_empty() && self.leave_out.iter().all(|&l| l);
        let has_obstacles = self.obstacle_bvh.is_some() && !all_left_out;
        let searched = if has_obstacles { self.x0.len() } else { n };
        // The point–triangle margin reaches from the triangle's own box ([`margin`]); the
        // layer's triangle boxes are already inflated by `inflate`.
        let margins = |k: usize| {
            settings_of.map(|(inflate, self_m, cross_m)| {
                let m = if k == 0 { self_m } else { cross_m };
                (m.point_triangle - inflate).max(0.0)
            })
        };
        // The cloth's boxes of every layer, the trees' boxes (the layers' union) and, with two
        // layers, the boxes holding both layers' reaches ([`EitherLayer`]): one pass over the
        // vertices, one over the triangles, one over the edges ([`cloth_boxes`]).
        let grow =
            settings_of.map(|(inflate, self_margins, _)| (inflate, 0.5 * self_margins.edge_edge));
        // An update recomputes only the boxes of the changed vertices and of the triangles and
        // edges holding one: the others' inputs are those of the search before it, which left
        // their swept boxes in layer 0 ([`cloth_boxes`]).
        let only = (incremental && self.swept_boxes_current)
            .then_some((&self.changed[..n], &self.changed_tris[..]));
        cloth_boxes(
            (&self.x0[..searched], &self.x1[..searched]),
            (&self.tris, &self.edges, &self.owned),
            &mut self.layers[..num_layers],
            &mut self.boxes,
            &mut self.either,
            grow,
            margins(0),
            only,
        );
        self.swept_boxes_current = true;
        if has_obstacles {
            for (l, layer) in self.layers[..num_layers].iter_mut().enumerate() {
                let (inflate, self_margins, cross_margins) = settings_of[l];
                // Obstacle boxes also grow by the obstacles' own thickness.
                triangle_boxes_of_points(
                    &layer.points,
                    &self.obstacle_tris,
                    n as u32,
                    inflate + extra,
                    &mut layer.obstacle_tris,
                );
                edge_boxes(
                    &layer.points,
                    &self.obstacle_edges,
                    n as u32,
                    cross_margins.edge_edge - 0.5 * self_margins.edge_edge,
                    &mut layer.obstacle_edges,
                );
                // The repulsion and the CCD rounds meet the curved colliders this cloth meets
                // through their exact surface, not their tessellations
                // ([`ClothCollision::set_proximity_leave_out`], [`ClothCollision::analytic_ccd`]):
                // their boxes are left empty. The impact zones and the last resort keep them.
                let leave_out = &self.leave_out;
                if analytic && !leave_out.is_empty() {
                    for (b, t) in layer.obstacle_tris.iter_mut().zip(&self.obstacle_tris) {
                        if leave_out[t[0] as usize] {
                            *b = Aabb::EMPTY;
                        }
                    }
                    for (b, e) in layer.obstacle_edges.iter_mut().zip(&self.obstacle_edges) {
                        if leave_out[e[0] as usize] {
                            *b = Aabb::EMPTY;
                        }
                    }
                }
            }
        }
        let [first, second] = &self.layers;
        let union = |out: &mut [Aabb], a: &[Aabb], b: &[Aabb]| {
            if num_layers == 2 {
                for_each_chunk(out, |first, out| {
                    for ((o, x), y) in out.iter_mut().zip(&a[first..]).zip(&b[first..]) {
                        *o = x.union(y);
                    }
                });
            } else {
                out.copy_from_slice(a);
            }
        };
        // The full self query uses the wide tree; the binary one serves the updates' queries
        // and the obstacle pairs' cloth boxes, and is refitted only for them.
        let wide_query = !incremental && settings.self_collision;
        if wide_query {
            self.wide.refit(&self.boxes);
        }
        if incremental || has_obstacles {
            self.bvh.refit(&self.boxes);
        }
        // With two layers, one box per cloth triangle and edge holding both layers' reaches:
        // a test neither layer passes (most of them) is culled by one overlap instead of two.
        let either = (num_layers == 2 && settings.self_collision).then_some(&self.either);
        let cloth = MeshView {
            tris: &self.tris,
            edges: &self.edges,
            owned: &self.owned,
            tri_boxes: [&first.tris, &second.tris],
            edge_boxes: [&first.edges, &second.edges],
            either,
            offset: 0,
        };
        let members = self.members.as_ref();
        // The largest η of any test ([`pair_eta`] adds the same terms, each at most these).
        let screen = Screen::new(eta, eta + self.max_cloth_extra + extra, eta_c, &self.x0);
        // The neighbour tests' bounds kept from a reference: the substep's full search may set a
        // new one, every full search clears by them. (An update culls only the tests of the
        // changed vertices, few of which pass: the drifts would cost more than they save.)
        let reference = if settings.self_collision && !incremental {
            let refresh = reach == Reach::Substep;
            self.reference_bounds
                .prepare(&self.x0[..n], &self.x1[..n], refresh)
        } else {
            None
        };
        let cull = |point_margin: [f32; 2]| Cull {
            points: [&first.points, &second.points],
            point_margin,
            layers: num_layers,
            only: incremental.then_some(&self.changed[..]),
            apart: members.map(|m| m.apart_from_self()),
            reference,
            bound: Bound {
                x0: &self.x0,
                x1: &self.x1,
                extra: &self.extra_thickness,
                n,
                eta,
                eta_c,
                screen,
            },
        };
        let capacity = candidates.capacity();
        if settings.self_collision {
            let tris = &self.tris;
            if incremental {
                // A pair of two changed triangles is reported by the lower one.
                let changed = &self.tri_changed;
                let keep = |a: u32, b: u32| {
                    (a < b || !changed[b as usize])
                        && !shares_any(&tris[a as usize], &tris[b as usize])
                        && members.is_none_or(|m| m.triangles_meet(a, b))
                };
                self_pairs_of(&self.bvh, &self.changed_tris, &keep, &mut self.self_ws);
            } else {
                let keep = |a: u32, b: u32| {
                    !shares_any(&tris[a as usize], &tris[b as usize])
                        && members.is_none_or(|m| m.triangles_meet(a, b))
                };
                self_pairs_wide(&self.wide, &keep, &mut self.self_ws);
            }
            stats.pool_grew |= self.self_ws.grew();
            // The full search merges the neighbour tests into the tree's in triangle-pair
            // order (the order of a search over all overlapping pairs); an update appends them.
            stats.pool_grew |= emit_chunked(
                &self.self_ws,
                &mut self.emit_chunks,
                candidates,
                (&cloth, &cloth),
                &cull(margins(0)),
                (!incremental).then_some(&self.neighbours),
            );
            if incremental {
                stats.pool_grew |= self.neighbours.emit(&cloth, &cull(margins(0)), candidates);
            }
        }
        if let Some(obvh) = self.obstacle_bvh.as_mut().filter(|_| has_obstacles) {
            union(
                &mut self.obstacle_boxes,
                &first.obstacle_tris,
                &second.obstacle_tris,
            );
            obvh.refit(&self.obstacle_boxes);
            if incremental {
                cross_pairs_of(&self.bvh, &self.changed_tris, obvh, &mut self.cross_ws);
            } else {
                cross_pairs(&self.bvh, obvh, &mut self.cross_ws);
            }
            stats.pool_grew |= self.cross_ws.grew();
            let obstacle = MeshView {
                tris: &self.obstacle_tris,
                edges: &self.obstacle_edges,
                owned: &self.obstacle_owned,
                tri_boxes: [&first.obstacle_tris, &second.obstacle_tris],
                edge_boxes: [&first.obstacle_edges, &second.obstacle_edges],
                either: None,
                offset: n as u32,
            };
            stats.pool_grew |= emit_chunked(
                &self.cross_ws,
                &mut self.emit_chunks,
                candidates,
                (&cloth, &obstacle),
                &cull(margins(1)),
                None,
            );
        }
        stats.pool_grew |= candidates.capacity() != capacity;
    }
}

/// True when two triangles share a vertex (or are the same triangle). All nine comparisons,
/// without short-circuits: the tree queries ask it for every overlapping pair, most of them
/// topological neighbours sharing a vertex at an unpredictable position.
#[inline]
pub(super) fn shares_any(a: &[u32; 3], b: &[u32; 3]) -> bool {
    let meets = |x: u32| (x == b[0]) | (x == b[1]) | (x == b[2]);
    meets(a[0]) | meets(a[1]) | meets(a[2])
}

/// One test between the features of two cloth triangles that share a vertex: its features
/// ([`CullKey`]; its vertices follow from the cloth's triangles and edges) and the triangle
/// pair `[a, b]`, `a < b`, whose ownership emits it. Sixteen bytes: a search reads every
/// neighbour test, most only to cull it.
#[derive(Clone, Copy, Debug)]
pub(super) struct NeighbourTest {
    key: CullKey,
    pair: [u32; 2],
}

impl NeighbourTest {
    /// Pushes the test (number `k` of the list) to `out` if `cull` passes it (`cloth` gives the
    /// boxes), given that it passed [`CullKey::may_pass`]. Adds to `computed` the bounds it
    /// computed in full ([`Bound::refine_kept`]).
    #[inline]
    fn emit_may_pass(
        &self,
        k: usize,
        cloth: &MeshView<'_>,
        cull: &Cull<'_>,
        out: &mut Vec<Candidate>,
        computed: &mut u32,
    ) {
        if let Some(c) = self.passed_may_pass(k, cloth, cull, computed) {
            out.push(c);
        }
    }

    /// The test's candidate (number `k` of the list), marked with the layers `cull` passes
    /// (`cloth` gives the boxes), or `None` when it passes none.
    /// Adds to `computed` the bounds it computed in full ([`Bound::refine_kept`]).
    #[inline]
    fn passed(
        &self,
        k: usize,
        cloth: &MeshView<'_>,
        cull: &Cull<'_>,
        computed: &mut u32,
    ) -> Option<Candidate> {
        if !self.key.may_pass(cloth, cull) {
            return None;
        }
        self.passed_may_pass(k, cloth, cull, computed)
    }

    /// [`NeighbourTest::passed`] for a test that passed [`CullKey::may_pass`].
    #[inline]
    fn passed_may_pass(
        &self,
        k: usize,
        cloth: &MeshView<'_>,
        cull: &Cull<'_>,
        computed: &mut u32,
    ) -> Option<Candidate> {
        let c = self.key.candidate(cloth);
        let layers = self.passes(&c, cloth, cull);
        if layers == 0 {
            return None;
        }
        let layers = match &cull.reference {
            Some(r) => {
                let (layers, full) = cull.bound.refine_kept(r, k, c.kind, &c.verts, layers);
                *computed += u32::from(full);
                layers
            }
            None => cull.bound.refine(c.kind, &c.verts, layers),
        };
        Some(Candidate { layers, ..c })
    }

    /// The layers whose cull passes the test, `c` its candidate ([`Candidate::layers`]; 0:
    /// none, the test is culled; `cloth` gives the boxes). Apart from
    /// [`CullKey::may_pass`], which the caller checked.
    #[inline]
    fn passes(&self, c: &Candidate, cloth: &MeshView<'_>, cull: &Cull<'_>) -> u8 {
        if cull
            .only
            .is_some_and(|m| !c.verts.iter().any(|&i| m[i as usize]))
        {
            return 0;
        }
        // Neighbours are triangles of one cloth: none if that cloth does not meet itself.
        if cull.apart.is_some_and(|a| a[c.verts[0] as usize]) {
            return 0;
        }
        let [f0, f1] = self.key.features();
        let pass = |l: usize| match c.kind {
            Kind::PointTriangle => {
                cull.points[l][f0].overlaps(&cloth.tri_boxes[l][f1].inflate(cull.point_margin[l]))
            }
            Kind::EdgeEdge => cloth.edge_boxes[l][f0].overlaps(&cloth.edge_boxes[l][f1]),
        };
        layer_mask(cull.layers, pass)
    }
}

/// A neighbour test's two features: a point and a triangle, or two edges (indices into the
/// cloth's vertices, triangles and edges), the first with [`CullKey::EDGE_EDGE`] set for an
/// edge–edge test.
#[derive(Clone, Copy, Debug)]
pub(super) struct CullKey([u32; 2]);

impl CullKey {
    /// Marks an edge–edge test in the first feature (feature indices stay below
    /// [`MAX_PRIMITIVES`](crate::collide::bvh::MAX_PRIMITIVES), far below this bit).
    const EDGE_EDGE: u32 = 1 << 31;

    fn new(kind: Kind, features: [u32; 2]) -> Self {
        let [f0, f1] = features;
        match kind {
            Kind::PointTriangle => Self([f0, f1]),
            Kind::EdgeEdge => Self([f0 | Self::EDGE_EDGE, f1]),
        }
    }

    #[inline]
    fn kind(self) -> Kind {
        if self.0[0] & Self::EDGE_EDGE == 0 {
            Kind::PointTriangle
        } else {
            Kind::EdgeEdge
        }
    }

    /// The two feature indices.
    #[inline]
    fn features(self) -> [usize; 2] {
        [(self.0[0] & !Self::EDGE_EDGE) as usize, self.0[1] as usize]
    }

    /// The test's candidate (no layers): the point and the triangle's corners, or the two
    /// edges' ends, as the cloth `cloth` lists them.
    #[inline]
    fn candidate(self, cloth: &MeshView<'_>) -> Candidate {
        let [f0, f1] = self.features();
        let kind = self.kind();
        let verts = match kind {
            Kind::PointTriangle => {
                let t = cloth.tris[f1];
                [f0 as u32, t[0], t[1], t[2]]
            }
            Kind::EdgeEdge => {
                let ([p0, p1], [q0, q1]) = (cloth.edges[f0], cloth.edges[f1]);
                [p0, p1, q0, q1]
            }
        };
        Candidate {
            kind,
            verts,
            layers: 0,
        }
    }

    /// False when the test passes no layer of `cull` because its boxes in both layers together
    /// do not overlap (a point–triangle test: the point's swept box against the triangle's
    /// union reach; edge–edge: the edges' union boxes, [`EitherLayer`]); true otherwise, and
    /// when `cloth` has no union boxes. Most neighbour tests fail it, so a search sorts them
    /// out with it alone ([`emit_chunked`]).
    #[inline(always)]
    fn may_pass(self, cloth: &MeshView<'_>, cull: &Cull<'_>) -> bool {
        let Some(e) = cloth.either else {
            return true;
        };
        let [f0, f1] = self.features();
        let (a, b) = match self.kind() {
            Kind::PointTriangle => (&cull.points[0][f0], &e.tris[f1]),
            Kind::EdgeEdge => (&e.edges[f0], &e.edges[f1]),
        };
        a.overlaps(b)
    }
}

/// Tests between the features of topological neighbours: triangles sharing a vertex or an edge
/// overlap in every search, so the tree search leaves their pairs out
/// ([`ClothCollision::find_candidates`]) and their tests come from this list, built once at
/// cloth creation. Each pair of neighbours contributes the tests its triangles own (the
/// ownership of [`emit_tests`]), so the list and the tree's tests never overlap and together
/// are the tests of every overlapping pair: a fold through a neighbour is found as before.
/// A search culls the list with the same per-feature box tests, in fixed chunks whose buffers
/// hold a whole chunk (no allocation).
#[derive(Debug, Default)]
pub(super) struct NeighbourTests {
    tests: Vec<NeighbourTest>,
    /// Per chunk of [`PAIR_CHUNK`] triangles, where its tests (by the pair's first triangle)
    /// start; one more entry at the end.
    chunk_starts: Vec<usize>,
    bufs: Vec<Vec<Candidate>>,
    /// Per cloth vertex, where its tests start in `by_vertex`; one more entry at the end.
    vertex_starts: Vec<u32>,
    /// The indices of the tests holding each vertex, vertex by vertex, each ascending.
    by_vertex: Vec<u32>,
    /// Scratch of [`NeighbourTests::emit`]: one bit per test, set for the tests holding a
    /// changed vertex (all clear between searches).
    marks: Vec<u64>,
}

/// Neighbour tests per parallel cull task (fixed: the split does not depend on the thread count).
const NEIGHBOUR_CHUNK: usize = 4096;

impl NeighbourTests {
    /// The tests of every pair of `tris` sharing a vertex, `owned` the triangles' features.
    pub(super) fn new(num_vertices: usize, tris: &[[u32; 3]], owned: &[Owned]) -> Self {
        let mut ring: Vec<Vec<u32>> = vec![Vec::new(); num_vertices];
        for (t, tri) in tris.iter().enumerate() {
            for &v in tri {
                ring[v as usize].push(t as u32);
            }
        }
        let mut pairs: Vec<(u32, u32)> = ring
            .iter()
            .flat_map(|r| {
                r.iter()
                    .enumerate()
                    .flat_map(move |(k, &a)| r[k + 1..].iter().map(move |&b| (a.min(b), a.max(b))))
            })
            .collect();
        pairs.sort_unstable();
        pairs.dedup();
        let mut tests = Vec::new();
        // Each test's vertices, for the per-vertex index.
        let mut verts: Vec<[u32; 4]> = Vec::new();
        for (a, b) in pairs {
            for (t, u) in [(a, b), (b, a)] {
                let own = &owned[t as usize];
                let other = tris[u as usize];
                for &p in &own.verts[..usize::from(own.num_verts)] {
                    if !other.contains(&p) {
                        tests.push(NeighbourTest {
                            key: CullKey::new(Kind::PointTriangle, [p, u]),
                            pair: [a, b],
                        });
                        verts.push([p, other[0], other[1], other[2]]);
                    }
                }
            }
            let (oa, ob) = (&owned[a as usize], &owned[b as usize]);
            for k in 0..usize::from(oa.num_edges) {
                let [p0, p1] = oa.edge_verts[k];
                for l in 0..usize::from(ob.num_edges) {
                    let [q0, q1] = ob.edge_verts[l];
                    if p0 == q0 || p0 == q1 || p1 == q0 || p1 == q1 {
                        continue;
                    }
                    tests.push(NeighbourTest {
                        key: CullKey::new(Kind::EdgeEdge, [oa.edges[k], ob.edges[l]]),
                        pair: [a, b],
                    });
                    verts.push([p0, p1, q0, q1]);
                }
            }
        }
        let bufs = tests
            .chunks(NEIGHBOUR_CHUNK)
            .map(|c| Vec::with_capacity(c.len()))
            .collect();
        let chunk_starts = (0..=tris.len().div_ceil(PAIR_CHUNK))
            .map(|c| tests.partition_point(|t| (t.pair[0] as usize) < c * PAIR_CHUNK))
            .collect();
        let mut vertex_starts = vec![0u32; num_vertices + 1];
        for t in &verts {
            for &v in t {
                vertex_starts[v as usize + 1] += 1;
            }
        }
        for v in 0..num_vertices {
            vertex_starts[v + 1] += vertex_starts[v];
        }
        let mut fill: Vec<u32> = vertex_starts[..num_vertices].to_vec();
        let mut by_vertex = vec![0u32; 4 * tests.len()];
        for (k, t) in verts.iter().enumerate() {
            for &v in t {
                by_vertex[fill[v as usize] as usize] = k as u32;
                fill[v as usize] += 1;
            }
        }
        let marks = vec![0u64; tests.len().div_ceil(64)];
        Self {
            tests,
            chunk_starts,
            bufs,
            vertex_starts,
            by_vertex,
            marks,
        }
    }

    /// The tests of chunk `c` of the triangles ([`PAIR_CHUNK`] each, by the pair's first), and
    /// the number of the first in the list.
    fn chunk(&self, c: usize) -> (&[NeighbourTest], usize) {
        match (self.chunk_starts.get(c), self.chunk_starts.get(c + 1)) {
            (Some(&a), Some(&b)) => (&self.tests[a..b], a),
            _ => (&[], 0),
        }
    }

    /// The number of tests.
    pub(super) fn len(&self) -> usize {
        self.tests.len()
    }

    /// Grows each emission buffer of [`emit_chunks`] by the room its chunk's neighbour tests
    /// need (they are merged into the tree's tests, [`emit_chunked`]), and its scratch of
    /// neighbour tests by their number.
    pub(super) fn reserve_in(&self, bufs: &mut [EmitBuffer]) {
        for (buf, w) in bufs.iter_mut().zip(self.chunk_starts.windows(2)) {
            buf.tests.reserve(w[1] - w[0]);
            buf.neighbours.reserve(w[1] - w[0]);
        }
    }

    /// Appends to `out` the tests `cull` passes, in list order (`cloth` gives the boxes). True
    /// if `out` had to grow.
    ///
    /// When `cull` keeps only tests with a marked vertex (an incremental search), the tests
    /// holding one are marked from the per-vertex index in a bit set and only they are culled,
    /// in index order: the tests the whole walk would pass, in the same order, at the cost of
    /// the marked vertices' tests and one pass over the bit set.
    pub(super) fn emit(
        &mut self,
        cloth: &MeshView<'_>,
        cull: &Cull<'_>,
        out: &mut ArenaVec<'_, Candidate>,
    ) -> bool {
        let tests = &self.tests[..];
        if let Some(marked) = cull.only {
            // Mark the tests holding a changed vertex, then cull the marked ones of each chunk
            // of the list into the chunk's buffer (in parallel when many are marked): the
            // buffers in chunk order hold the marked tests that pass, in list order.
            let starts = &self.vertex_starts;
            let mut num_marked = 0;
            for (v, _) in marked[..starts.len() - 1]
                .iter()
                .enumerate()
                .filter(|(_, m)| **m)
            {
                let held = &self.by_vertex[starts[v] as usize..starts[v + 1] as usize];
                num_marked += held.len();
                for &k in held {
                    self.marks[k as usize / 64] |= 1 << (k % 64);
                }
            }
            let work = |(c, (words, buf)): (usize, (&mut [u64], &mut Vec<Candidate>))| {
                buf.clear();
                let first = c * NEIGHBOUR_CHUNK;
                for (w, word) in words.iter_mut().enumerate() {
                    let mut bits = std::mem::take(word);
                    while bits != 0 {
                        let k = first + w * 64 + bits.trailing_zeros() as usize;
                        bits &= bits - 1;
                        if let Some(candidate) = tests[k].passed(k, cloth, cull, &mut 0) {
                            buf.push(candidate);
                        }
                    }
                }
            };
            // Whole words per chunk: a chunk's bits are its tests.
            const WORDS: usize = NEIGHBOUR_CHUNK / 64;
            const _: () = assert!(NEIGHBOUR_CHUNK % 64 == 0);
            if num_marked >= EMIT_PARALLEL_MIN && parallel_here() {
                self.marks
                    .par_chunks_mut(WORDS)
                    .zip(self.bufs.par_iter_mut())
                    .enumerate()
                    .for_each(work);
            } else {
                self.marks
                    .chunks_mut(WORDS)
                    .zip(self.bufs.iter_mut())
                    .enumerate()
                    .for_each(work);
            }
        } else {
            let work = |(c, (tests, buf)): (usize, (&[NeighbourTest], &mut Vec<Candidate>))| {
                buf.clear();
                for (k, t) in tests.iter().enumerate() {
                    if let Some(candidate) = t.passed(c * NEIGHBOUR_CHUNK + k, cloth, cull, &mut 0)
                    {
                        buf.push(candidate);
                    }
                }
            };
            if tests.len() >= EMIT_PARALLEL_MIN && parallel_here() {
                tests
                    .par_chunks(NEIGHBOUR_CHUNK)
                    .zip(self.bufs.par_iter_mut())
                    .enumerate()
                    .for_each(work);
            } else {
                tests
                    .chunks(NEIGHBOUR_CHUNK)
                    .zip(self.bufs.iter_mut())
                    .enumerate()
                    .for_each(work);
            }
        }
        let capacity = out.capacity();
        for buf in &self.bufs {
            out.extend_from_slice(buf);
        }
        out.capacity() != capacity
    }
}

/// What a candidate search looks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Reach {
    /// Contacts at x^n within η (repulsion and friction) and collisions from x^n to x^n + h v
    /// within the CCD tolerance: the substep's search, serving the repulsion and the CCD rounds.
    Substep,
    /// Collisions from x^n to x^n + h v within the CCD tolerance (CCD rounds after the first,
    /// impact zones, the last resort).
    Swept,
}

/// The box margins of detection's pre-tests at one η ([`margin`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct FeatureMargins {
    point_triangle: f32,
    edge_edge: f32,
}

impl FeatureMargins {
    fn of(eta: f64) -> Self {
        Self {
            point_triangle: margin(Kind::PointTriangle, eta),
            edge_edge: margin(Kind::EdgeEdge, eta),
        }
    }
}

/// The boxes of a search over the cloth (and, in `points`, the obstacle vertices too): per layer
/// of `layers` (one or two; [`LayerBoxes`]) the vertices' boxes (layer 0 from `x.0` to `x.1`, layer
/// 1 at `x.0`), the triangles' boxes from their corners' grown by `grow[l].0`, the edges' grown by
/// `grow[l].1`; the trees' boxes `tree` (the layers' union, or layer 0's), and with two layers
/// the [`EitherLayer`] boxes (each layer's triangle box grown by its point margin
/// `point_margin[l]`, united; the edges' union; per triangle the boxes of its owned features,
/// `mesh.2`, [`owned_boxes`]). The same values, computed the same way, as
/// [`vertex_boxes`], [`triangle_boxes_of_points`] and [`edge_boxes`] per layer followed by the
/// unions, in three passes (vertices, triangles, edges) instead of one per array. In fixed
/// chunks, like [`vertex_boxes`]: each box is written once.
///
/// With one layer and `only` (an update's search, [`ClothCollision::update_candidates`]): the
/// changed cloth vertices and the triangles holding one (ascending). Only their boxes, those of
/// the edges with a changed end and those of the obstacle vertices are computed; the other
/// layer-0 boxes are kept, and the trees' boxes are copied from layer 0's triangle boxes. This
/// is exact when the search before left layer 0's boxes at this `grow` for every cloth vertex,
/// triangle and edge (every search computes them, at the same swept layer's growth) and no
/// unmarked vertex's positions have changed since (a vertex whose velocity is unchanged keeps
/// `x.0` and `x.1` bit for bit): each kept box is then the value the same expression gives now.
#[allow(clippy::too_many_arguments)]
fn cloth_boxes(
    x: (&[Vec3], &[Vec3]),
    mesh: (&[[u32; 3]], &[[u32; 2]], &[Owned]),
    layers: &mut [LayerBoxes],
    tree: &mut [Aabb],
    either: &mut EitherLayer,
    grow: [(f32, f32); 2],
    point_margin: [f32; 2],
    only: Option<(&[bool], &[u32])>,
) {
    let (x0, x1) = x;
    let (tris, edges, owned) = mesh;
    let [(inflate0, edge0), (inflate1, edge1)] = grow;
    let [pm0, pm1] = point_margin;
    let searched = x0.len();
    match (layers, only) {
        ([], _) => {}
        ([l0], Some((changed, changed_tris))) => {
            for_each_chunk(&mut l0.points[..searched], |first, out| {
                for (k, o) in out.iter_mut().enumerate() {
                    let i = first + k;
                    // Obstacle vertices (past the cloth's) are all recomputed.
                    if changed.get(i).is_none_or(|&c| c) {
                        *o = Aabb::from_points(&[x0[i], x1[i]]);
                    }
                }
            });
            let p0 = &l0.points;
            for &t in changed_tris {
                l0.tris[t as usize] = triangle_box(p0, &tris[t as usize], 0, inflate0);
            }
            tree.copy_from_slice(&l0.tris);
            for_each_chunk(&mut l0.edges[..], |first, out| {
                for (o, e) in out.iter_mut().zip(&edges[first..]) {
                    if changed[e[0] as usize] | changed[e[1] as usize] {
                        *o = edge_box(p0, e, 0, edge0);
                    }
                }
            });
        }
        ([l0], None) => {
            vertex_boxes(x0, x1, &mut l0.points[..searched]);
            let p0 = &l0.points;
            for_each_chunk((&mut l0.tris[..], tree), |first, (t0, u)| {
                for ((o0, o), t) in t0.iter_mut().zip(u.iter_mut()).zip(&tris[first..]) {
                    *o0 = triangle_box(p0, t, 0, inflate0);
                    *o = *o0;
                }
            });
            edge_boxes(p0, edges, 0, edge0, &mut l0.edges);
        }
        // A search has one or two layers ([`Reach`]).
        ([l0, l1, ..], _) => {
            for_each_chunk(
                (&mut l0.points[..searched], &mut l1.points[..searched]),
                |first, (q0, q1)| {
                    for (k, (o0, o1)) in q0.iter_mut().zip(q1.iter_mut()).enumerate() {
                        let (a, b) = (x0[first + k], x1[first + k]);
                        *o0 = Aabb::from_points(&[a, b]);
                        *o1 = Aabb::from_points(&[a, a]);
                    }
                },
            );
            let (p0, p1) = (&l0.points, &l1.points);
            for_each_chunk(
                (
                    (
                        (&mut l0.tris[..], &mut l1.tris[..]),
                        (tree, &mut either.tris[..]),
                    ),
                    (&mut either.owned_points[..], &mut either.owned_edges[..]),
                ),
                |first, (((t0, t1), (u, e)), (op, oe))| {
                    for ((((((o0, o1), o), ot), opt), oed), (t, own)) in t0
                        .iter_mut()
                        .zip(t1.iter_mut())
                        .zip(u.iter_mut())
                        .zip(e.iter_mut())
                        .zip(op.iter_mut())
                        .zip(oe.iter_mut())
                        .zip(tris[first..].iter().zip(&owned[first..]))
                    {
                        let r0 = corner_union(p0, t, 0);
                        let r1 = corner_union(p1, t, 0);
                        let b0 = r0.inflate(inflate0);
                        let b1 = r1.inflate(inflate1);
                        *o0 = b0;
                        *o1 = b1;
                        *o = b0.union(&b1);
                        *ot = b0.inflate(pm0).union(&b1.inflate(pm1));
                        (*opt, *oed) = owned_boxes(own, (p0, t, &r0), &r1, (edge0, edge1));
                    }
                },
            );
            for_each_chunk(
                (
                    (&mut l0.edges[..], &mut l1.edges[..]),
                    &mut either.edges[..],
                ),
                |first, ((e0, e1), u)| {
                    for (((o0, o1), o), e) in e0
                        .iter_mut()
                        .zip(e1.iter_mut())
                        .zip(u.iter_mut())
                        .zip(&edges[first..])
                    {
                        let b0 = edge_box(p0, e, 0, edge0);
                        let b1 = edge_box(p1, e, 0, edge1);
                        *o0 = b0;
                        *o1 = b1;
                        *o = b0.union(&b1);
                    }
                },
            );
        }
    }
}

/// `out[i]`: the box of vertex `i` of the shared space for a search: its segment from `x0[i]`
/// to `x1[i]`. In fixed chunks, in parallel for many vertices: each box is written once.
pub(super) fn vertex_boxes(x0: &[Vec3], x1: &[Vec3], out: &mut [Aabb]) {
    for_each_chunk(out, |first, out| {
        for ((o, &a), &b) in out.iter_mut().zip(&x0[first..]).zip(&x1[first..]) {
            *o = Aabb::from_points(&[a, b]);
        }
    });
}

/// `out[t]`: the box of triangle `tris[t]` (vertex indices offset by `offset` into the shared
/// space) from its corners' boxes `points`, grown by `grow`. With the vertex boxes of
/// [`vertex_boxes`] (each the box of a vertex's segment from `x0` to `x1`) it is the box of the
/// triangle's six corner positions, [`swept_triangle_boxes`]' box: the same minima and maxima of
/// the same coordinates, taken in another order (both ignore NaN), for half the comparisons.
/// In fixed chunks, like [`vertex_boxes`].
pub(super) fn triangle_boxes_of_points(
    points: &[Aabb],
    tris: &[[u32; 3]],
    offset: u32,
    grow: f32,
    out: &mut [Aabb],
) {
    for_each_chunk(out, |first, out| {
        for (o, t) in out.iter_mut().zip(&tris[first..]) {
            *o = triangle_box(points, t, offset, grow);
        }
    });
}

/// The box of triangle `t` (vertex indices offset by `offset` into the shared space) from its
/// corners' boxes `points`, grown by `grow`: [`triangle_boxes_of_points`] for one triangle.
#[inline]
fn triangle_box(points: &[Aabb], t: &[u32; 3], offset: u32, grow: f32) -> Aabb {
    corner_union(points, t, offset).inflate(grow)
}

/// The union of triangle `t`'s corner boxes `points` (indices offset by `offset`):
/// [`triangle_box`] before its growth.
#[inline]
fn corner_union(points: &[Aabb], t: &[u32; 3], offset: u32) -> Aabb {
    let [a, b, c] = t.map(|v| &points[(v + offset) as usize]);
    a.union(b).union(c)
}

/// `out[e]`: the box of edge `edges[e]` (vertex indices offset by `offset`
/// into the shared space) grown by `grow`. In fixed chunks, like [`vertex_boxes`].
pub(super) fn edge_boxes(
    points: &[Aabb],
    edges: &[[u32; 2]],
    offset: u32,
    grow: f32,
    out: &mut [Aabb],
) {
    for_each_chunk(out, |first, out| {
        for (o, e) in out.iter_mut().zip(&edges[first..]) {
            *o = edge_box(points, e, offset, grow);
        }
    });
}

/// The box of edge `e` (vertex indices offset by `offset` into the shared space) from its ends'
/// boxes `points`, grown by `grow`: [`edge_boxes`] for one edge.
#[inline]
fn edge_box(points: &[Aabb], e: &[u32; 2], offset: u32, grow: f32) -> Aabb {
    points[(e[0] + offset) as usize]
        .union(&points[(e[1] + offset) as usize])
        .inflate(grow)
}

/// The vertices and edges one triangle owns ([`ownership`]): the features
/// [`emit_tests`] emits for it, in corner order (vertex `k` before `k + 1`,
/// edge `k` joining corners `k` and `k + 1`), so a triangle pair needs no
/// ownership look-ups of its own.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Owned {
    /// Owned vertices (mesh-local indices), the first `num_verts`.
    verts: [u32; 3],
    /// Owned edges (indices into the mesh's edge list), the first `num_edges`.
    edges: [u32; 3],
    /// Their end vertices (mesh-local).
    edge_verts: [[u32; 2]; 3],
    num_verts: u8,
    num_edges: u8,
    /// The corners (bit `k` for corner `k`) that are owned vertices.
    vert_corners: u8,
}

/// Per triangle of `tris` (whose sorted unique `edges` are given) its
/// [`Owned`] features.
pub(super) fn owned_features(
    num_vertices: usize,
    tris: &[[u32; 3]],
    edges: &[[u32; 2]],
) -> Vec<Owned> {
    let (tri_edges, vertex_owner, edge_owner) = ownership(num_vertices, tris, edges);
    tris.iter()
        .zip(&tri_edges)
        .enumerate()
        .map(|(t, (tri, te))| {
            let mut o = Owned::default();
            for (k, &p) in tri.iter().enumerate() {
                if vertex_owner[p as usize] == t as u32 {
                    o.verts[usize::from(o.num_verts)] = p;
                    o.num_verts += 1;
                    o.vert_corners |= 1 << k;
                }
            }
            for &e in te {
                if edge_owner[e as usize] == t as u32 {
                    o.edges[usize::from(o.num_edges)] = e;
                    o.edge_verts[usize::from(o.num_edges)] = edges[e as usize];
                    o.num_edges += 1;
                }
            }
            o
        })
        .collect()
}

/// One mesh of a candidate search: its topology, its boxes for this search,
/// and where its vertices sit in the shared vertex space.
#[derive(Clone, Copy)]
pub(super) struct MeshView<'a> {
    tris: &'a [[u32; 3]],
    edges: &'a [[u32; 2]],
    owned: &'a [Owned],
    /// Per layer ([`LayerBoxes`]) the triangles' boxes.
    tri_boxes: [&'a [Aabb]; 2],
    /// Per layer the edges' boxes, grown by the layer's edge margin.
    edge_boxes: [&'a [Aabb]; 2],
    /// In a search with two layers (cloth only): the boxes that contain both layers' boxes
    /// ([`EitherLayer`]).
    either: Option<&'a EitherLayer>,
    offset: u32,
}

/// Per cloth triangle the union of its two layers' point–triangle reaches (its box in each
/// layer grown by that layer's point margin), per cloth edge the union of its two layers'
/// boxes. A test one layer's cull passes passes the cull of these boxes with the swept layer's
/// point boxes (which hold the points at x^n of the other layer): each box holds the layer's,
/// and boxes that hold overlapping boxes overlap. So a test these boxes do not pass passes
/// neither layer.
#[derive(Debug, Default)]
pub(super) struct EitherLayer {
    tris: Vec<Aabb>,
    edges: Vec<Aabb>,
    /// Per triangle a box holding the swept boxes of the vertices it owns ([`Owned`]; empty
    /// when it owns none).
    owned_points: Vec<Aabb>,
    /// Per triangle a box holding the boxes above of the edges it owns (empty when it owns
    /// none).
    owned_edges: Vec<Aabb>,
}

impl EitherLayer {
    /// Boxes for `tris` triangles and `edges` edges.
    pub(super) fn new(tris: usize, edges: usize) -> Self {
        Self {
            tris: vec![Aabb::EMPTY; tris],
            edges: vec![Aabb::EMPTY; edges],
            owned_points: vec![Aabb::EMPTY; tris],
            owned_edges: vec![Aabb::EMPTY; tris],
        }
    }

    /// False when no test of the cloth triangle pair `(a, b)` can pass these boxes' cull
    /// ([`emit_tests`]): no point `a` owns meets `b`'s reach, none `b` owns meets `a`'s, and
    /// the boxes of the edges each owns do not meet. The owned boxes hold the boxes each test
    /// is culled with, and boxes holding overlapping boxes overlap, so a pair this rejects
    /// emits nothing: skipping it leaves the list of tests unchanged. Valid after a search
    /// with two layers (the only searches with these boxes, [`MeshView::either`]).
    #[inline]
    fn pair_may_emit(&self, a: u32, b: u32) -> bool {
        let (a, b) = (a as usize, b as usize);
        self.owned_points[a].overlaps(&self.tris[b])
            | self.owned_points[b].overlaps(&self.tris[a])
            | self.owned_edges[a].overlaps(&self.owned_edges[b])
    }
}

/// Boxes holding the [`EitherLayer`] boxes of one triangle's owned features `own`: for the
/// owned vertices, the swept box of the one owned corner of triangle `corners.1` (from the
/// layer-0 point boxes `corners.0`), or the union of all three (`corners.2`) when it owns more;
/// for the owned edges, the corners' union in each layer (`corners.2`, `union1`) grown by that
/// layer's edge growth `grow` and united, which holds each owned edge's union box (its ends'
/// boxes per layer, grown, united). Unions take minima and maxima ignoring NaN and rounding is
/// monotone, so each containment holds in `f32`. Empty for a triangle that owns none.
#[inline]
fn owned_boxes(
    own: &Owned,
    corners: (&[Aabb], &[u32; 3], &Aabb),
    union1: &Aabb,
    grow: (f32, f32),
) -> (Aabb, Aabb) {
    let (points0, t, union0) = corners;
    let verts = match own.vert_corners {
        0 => Aabb::EMPTY,
        m if m.count_ones() == 1 => points0[t[m.trailing_zeros() as usize] as usize],
        _ => *union0,
    };
    let edges = if own.num_edges == 0 {
        Aabb::EMPTY
    } else {
        union0.inflate(grow.0).union(&union1.inflate(grow.1))
    };
    (verts, edges)
}

/// How a search culls the tests of a triangle pair: per layer the vertices' boxes and the
/// point–triangle margin; a test is kept when one of the first `layers` layers passes it, and,
/// with `only`, when one of its vertices is marked.
pub(super) struct Cull<'a> {
    points: [&'a [Aabb]; 2],
    point_margin: [f32; 2],
    layers: usize,
    only: Option<&'a [bool]>,
    /// Per cloth vertex of a shared stage: its cloth does not meet itself (no neighbour tests).
    apart: Option<&'a [bool]>,
    /// The neighbour tests' bounds kept from a reference ([`Bound::refine_kept`]).
    reference: Option<ReferenceView<'a>>,
    /// What decides, for a test the boxes pass, whether a detection can still find it.
    bound: Bound<'a>,
}

/// The separating-axis bound at listing ([`distance_lower_bound`]): a test whose layer's cull
/// passes, but whose features the bound shows too far apart for that layer's detection at the
/// positions and velocities it is listed with, keeps its place in the list (a CCD round's
/// serial pass re-tests it if an impulse moves one of its vertices) with the layer's bit clear,
/// so no detection pass visits it. The bound answers only beyond [`BOUND_SLACK`] past the
/// detection's own threshold, as in the detection's pre-tests ([`surely_far`], [`stay_apart`]),
/// so a cleared bit is a detection that would have answered no.
#[derive(Clone, Copy)]
pub(super) struct Bound<'a> {
    /// Positions at x^n and at the end of the substep (x^n + h v), of the shared space.
    x0: &'a [Vec3],
    x1: &'a [Vec3],
    /// Per vertex the thickness it adds to η ([`pair_eta`]), and the number of cloth vertices.
    extra: &'a [f32],
    n: usize,
    eta: f32,
    eta_c: f64,
    /// The `f32` screen's thresholds.
    screen: Screen,
}

impl Bound<'_> {
    /// `layers` less the layers whose detection the bound shows cannot find the test `kind`
    /// between `verts`.
    ///
    /// An `f32` screen ([`screened_lower_bound`], [`screened_closing`]) decides first; a layer
    /// it clears is one the `f64` bound clears too, and the `f64` bound is computed only for the
    /// layers the screen leaves open (`docs/methods/collision-detection.md`, *An `f32` screen
    /// before the bound*).
    #[inline]
    fn refine(&self, kind: Kind, verts: &[u32; 4], layers: u8) -> u8 {
        self.refine_and_low(kind, verts, layers).0
    }

    /// [`Bound::refine`] for neighbour test `k` of the list, with the bounds kept from a
    /// reference: when `reference` records, the screen's lower end is kept for the test; else a
    /// lower end kept at the current reference, less the drift since, clears the layers whose
    /// threshold it exceeds (the features' distance is at least that now), and only the layers
    /// left are refined (`docs/methods/collision-detection.md`, *Neighbour bounds from a
    /// reference*). A layer cleared here is one whose detection answers no.
    /// Also true when the bound was computed in full (recorded, or not decided by the kept one).
    #[inline]
    fn refine_kept(
        &self,
        reference: &ReferenceView<'_>,
        k: usize,
        kind: Kind,
        verts: &[u32; 4],
        mut layers: u8,
    ) -> (u8, bool) {
        if reference.record {
            let (layers, low) = self.refine_and_low(kind, verts, layers);
            reference.record(k, low);
            return (layers, true);
        }
        if let Some(low) = reference.low(k) {
            let low = f64::from(low);
            let (start, swept) = reference.drift(verts, kind.split(), layers & SWEPT != 0);
            if low - start > f64::from(self.screen.far[kind as usize]) {
                layers &= !AT_START;
            }
            if low - swept > f64::from(self.screen.apart) {
                layers &= !SWEPT;
            }
            if layers == 0 {
                return (0, false);
            }
        }
        (self.refine(kind, verts, layers), true)
    }

    /// [`Bound::refine`], and the lower end of the screen at x^n ([`screened_bounds`]): at most
    /// the features' distance there.
    #[inline]
    fn refine_and_low(&self, kind: Kind, verts: &[u32; 4], mut layers: u8) -> (u8, f32) {
        let start32 = verts.map(|i| self.x0[i as usize]);
        let (low, high) = screened_bounds(kind, &start32, self.screen.coord);
        let k = kind as usize;
        // The layers the screen leaves to the `f64` bound: neither surely cleared nor surely kept.
        let mut open = 0;
        if layers & AT_START != 0 {
            if low > self.screen.far[k] {
                layers &= !AT_START;
            } else if high.is_nan() || high >= self.screen.near[k] {
                open |= AT_START;
            }
        }
        let end32 = (layers & SWEPT != 0).then(|| verts.map(|i| self.x1[i as usize]));
        if let Some(end32) = &end32 {
            let (closing_low, closing_high) = screened_closing(kind, &start32, end32);
            if low - closing_high > self.screen.apart {
                layers &= !SWEPT;
            } else {
                let most = high - closing_low;
                if most.is_nan() || most >= self.screen.close {
                    open |= SWEPT;
                }
            }
        }
        if open == 0 {
            return (layers, low);
        }
        let start = start32.map(Vec3::as_dvec3);
        let bound = distance_lower_bound(kind, &start);
        if open & AT_START != 0 {
            let c = Candidate {
                kind,
                verts: *verts,
                layers,
            };
            let eta = f64::from(pair_eta(self.extra, self.n, &c, self.eta));
            if far_by_bound(kind, bound, eta) {
                layers &= !AT_START;
            }
        }
        if let Some(end32) = end32.filter(|_| open & SWEPT != 0) {
            let end = end32.map(Vec3::as_dvec3);
            if apart_by_bound(kind, bound, &start, &end, self.eta_c) {
                layers &= !SWEPT;
            }
        }
        (layers, low)
    }
}

/// The thresholds of [`Bound::refine`]'s `f32` screen: per [`Kind`] the proximity margin (plus
/// [`BOUND_SLACK`]) at the largest η of any test, rounded to the next `f32` above
/// ([`f32_above`]; a lower end beyond it clears the layer), and at the smallest η, rounded down
/// ([`f32_at_most`]; an upper end below it keeps the layer); the CCD reach (plus the slack)
/// rounded both ways likewise.
#[derive(Clone, Copy)]
pub(super) struct Screen {
    far: [f32; 2],
    near: [f32; 2],
    apart: f32,
    close: f32,
    /// The largest coordinate magnitude of the positions at x^n (the screen's `X`).
    coord: f32,
}

impl Screen {
    /// The thresholds for a search whose tests' η ([`pair_eta`]) lie between `eta` and
    /// `eta_max` (`eta` plus the largest extra thickness of cloth vertices and of obstacle
    /// vertices), over the positions `x0`.
    fn new(eta: f32, eta_max: f32, eta_c: f64, x0: &[Vec3]) -> Self {
        let at = |kind, eta: f32| f64::from(margin(kind, f64::from(eta))) + BOUND_SLACK;
        let kinds = [Kind::PointTriangle, Kind::EdgeEdge];
        let reach = ccd_limit(eta_c) + BOUND_SLACK;
        Self {
            far: kinds.map(|kind| f32_above(at(kind, eta_max))),
            near: kinds.map(|kind| f32_at_most(at(kind, eta))),
            apart: f32_above(reach),
            close: f32_at_most(reach),
            coord: largest_coordinate(x0),
        }
    }
}

/// The boxes of one layer of a search: per vertex of the shared space (cloth, then obstacle
/// vertices), per cloth triangle and edge, per obstacle triangle and edge. Sized at creation and
/// when obstacles are set.
#[derive(Debug, Default)]
pub(super) struct LayerBoxes {
    points: Vec<Aabb>,
    tris: Vec<Aabb>,
    edges: Vec<Aabb>,
    obstacle_tris: Vec<Aabb>,
    obstacle_edges: Vec<Aabb>,
}

impl LayerBoxes {
    /// Boxes for a cloth of `vertices`, `tris` triangles and `edges` edges, no obstacles.
    pub(super) fn new(vertices: usize, tris: usize, edges: usize) -> Self {
        Self {
            points: vec![Aabb::EMPTY; vertices],
            tris: vec![Aabb::EMPTY; tris],
            edges: vec![Aabb::EMPTY; edges],
            obstacle_tris: Vec::new(),
            obstacle_edges: Vec::new(),
        }
    }

    /// Resizes for `vertices` vertices of the shared space and the obstacles' `tris` triangles
    /// and `edges` edges.
    pub(super) fn set_obstacles(&mut self, vertices: usize, tris: usize, edges: usize) {
        self.points.resize(vertices, Aabb::EMPTY);
        self.obstacle_tris = vec![Aabb::EMPTY; tris];
        self.obstacle_edges = vec![Aabb::EMPTY; edges];
    }
}

/// Candidate tests per chunk of triangle pairs each emission buffer starts
/// with, per triangle of the chunk: twice the candidate list's start.
pub(super) const EMIT_TESTS_PER_TRIANGLE_FACTOR: usize = 2;

/// One chunk's emission buffer ([`emit_chunked`]): the tests it emits, and scratch for the
/// neighbour tests of its triangles that may pass the search's cull.
#[derive(Debug, Default)]
pub(super) struct EmitBuffer {
    tests: Vec<Candidate>,
    /// Indices (into the chunk's [`NeighbourTests::chunk`]) of the tests
    /// [`CullKey::may_pass`] keeps, ascending.
    neighbours: Vec<u32>,
}

/// Emission buffers for the pair chunks of a mesh of `num_triangles`
/// triangles, each with room for `tests_per_triangle` (times
/// [`EMIT_TESTS_PER_TRIANGLE_FACTOR`]) tests per triangle of its chunk.
pub(super) fn emit_chunks(num_triangles: usize, tests_per_triangle: usize) -> Vec<EmitBuffer> {
    let per_chunk =
        PAIR_CHUNK.min(num_triangles) * tests_per_triangle.max(1) * EMIT_TESTS_PER_TRIANGLE_FACTOR;
    (0..num_triangles.div_ceil(PAIR_CHUNK))
        .map(|_| EmitBuffer {
            tests: Vec::with_capacity(per_chunk),
            neighbours: Vec::new(),
        })
        .collect()
}

/// Below this many triangle pairs, emission runs on the calling thread.
pub(super) const EMIT_PARALLEL_MIN: usize = 2048;

/// Appends to `out` the tests of every pair `(a, b)` of the last query of
/// `ws` (`a` a triangle of `meshes.0`, `b` of `meshes.1`), in pair order
/// ([`emit_tests`]). Each chunk of the query emits into its own buffer of
/// `bufs` (in parallel from [`EMIT_PARALLEL_MIN`] pairs); the buffers are
/// appended in chunk order, so `out` is the serial emission's list for any
/// thread count. True if a buffer or `out` had to grow.
pub(super) fn emit_chunked(
    ws: &PairWorkspace,
    bufs: &mut Vec<EmitBuffer>,
    out: &mut ArenaVec<'_, Candidate>,
    meshes: (&MeshView<'_>, &MeshView<'_>),
    cull: &Cull<'_>,
    neighbours: Option<&NeighbourTests>,
) -> bool {
    let chunks = ws.num_chunks();
    let mut grew = false;
    if bufs.len() < chunks {
        bufs.resize_with(chunks, EmitBuffer::default);
        grew = true;
    }
    // The union boxes of a cloth's pairs with itself ([`EitherLayer`]; none for obstacle pairs).
    let self_either = meshes.0.either.zip(meshes.1.either).map(|(e, _)| e);
    let work = |(c, buf): (usize, &mut EmitBuffer)| -> bool {
        let EmitBuffer {
            tests: out,
            neighbours: near,
        } = buf;
        let capacity = (out.capacity(), near.capacity());
        out.clear();
        near.clear();
        // The neighbour tests of this chunk's triangles: first those the union boxes may pass
        // (most fail them, and a failed test passes no layer), then these merged in
        // triangle-pair order.
        let (tests, first): (&[NeighbourTest], usize) =
            neighbours.map_or((&[], 0), |nt| nt.chunk(c));
        for (k, t) in tests.iter().enumerate() {
            if t.key.may_pass(meshes.0, cull) {
                near.push(k as u32);
            }
        }
        let mut merged = near
            .iter()
            .map(|&k| (first + k as usize, &tests[k as usize]))
            .peekable();
        let mut computed = 0;
        for &(a, b) in ws.chunk_pairs(c) {
            while let Some((k, t)) = merged.next_if(|(_, t)| t.pair < [a, b]) {
                t.emit_may_pass(k, meshes.0, cull, out, &mut computed);
            }
            // A pair of cloth triangles none of whose tests can pass the union boxes emits
            // nothing.
            if self_either.is_some_and(|e| !e.pair_may_emit(a, b)) {
                continue;
            }
            emit_tests(out, (meshes.0, a), (meshes.1, b), cull);
        }
        for (k, t) in merged {
            t.emit_may_pass(k, meshes.0, cull, out, &mut computed);
        }
        if let Some(r) = &cull.reference {
            r.count(computed);
        }
        (out.capacity(), near.capacity()) != capacity
    };
    let active = &mut bufs[..chunks];
    let work_size = ws.pairs().len() + neighbours.map_or(0, |nt| nt.tests.len());
    grew |= if work_size >= EMIT_PARALLEL_MIN && parallel_here() {
        active
            .par_iter_mut()
            .enumerate()
            .map(work)
            .reduce(|| false, |a, b| a || b)
    } else {
        active
            .iter_mut()
            .enumerate()
            .map(work)
            .filter(|&g| g)
            .count()
            > 0
    };
    let capacity = out.capacity();
    for buf in active.iter() {
        out.extend_from_slice(&buf.tests);
    }
    grew || out.capacity() != capacity
}

/// Emits the tests between triangle `a.1` of mesh `a.0` and triangle `b.1`
/// of mesh `b.0` (possibly the same mesh): owned vertices of each against the
/// other triangle, owned edges against owned edges, each kept only if its
/// boxes pass ([`ClothCollision::find_candidates`]): a point's box within
/// `point_margin` of the other triangle's box, edge boxes overlapping.
#[inline]
pub(super) fn emit_tests(
    out: &mut Vec<Candidate>,
    a: (&MeshView<'_>, u32),
    b: (&MeshView<'_>, u32),
    cull: &Cull<'_>,
) {
    let wanted = |verts: &[u32; 4]| {
        cull.only
            .is_none_or(|m| verts.iter().any(|&i| m[i as usize]))
    };
    for ((mesh, t), (omesh, u)) in [(a, b), (b, a)] {
        let own = &mesh.owned[t as usize];
        if own.num_verts == 0 {
            continue;
        }
        let other = omesh.tris[u as usize].map(|i| i + omesh.offset);
        for &p in &own.verts[..usize::from(own.num_verts)] {
            let pg = p + mesh.offset;
            let verts = [pg, other[0], other[1], other[2]];
            if other.contains(&pg)
                || omesh
                    .either
                    .is_some_and(|e| !cull.points[0][pg as usize].overlaps(&e.tris[u as usize]))
                || !wanted(&verts)
            {
                continue;
            }
            // The triangle's reach per layer, grown here: most points fail the cull above.
            let layers = layer_mask(cull.layers, |l| {
                let reach = omesh.tri_boxes[l][u as usize].inflate(cull.point_margin[l]);
                cull.points[l][pg as usize].overlaps(&reach)
            });
            if layers == 0 {
                continue;
            }
            out.push(Candidate {
                kind: Kind::PointTriangle,
                verts,
                layers: cull.bound.refine(Kind::PointTriangle, &verts, layers),
            });
        }
    }
    let ((am, ta), (bm, tb)) = (a, b);
    let (oa, ob) = (&am.owned[ta as usize], &bm.owned[tb as usize]);
    let nb = usize::from(ob.num_edges);
    if nb == 0 {
        return;
    }
    for k in 0..usize::from(oa.num_edges) {
        let [p0, p1] = oa.edge_verts[k].map(|i| i + am.offset);
        let ea = oa.edges[k] as usize;
        for l in 0..nb {
            let [q0, q1] = ob.edge_verts[l].map(|i| i + bm.offset);
            if p0 == q0 || p0 == q1 || p1 == q0 || p1 == q1 {
                continue;
            }
            let verts = [p0, p1, q0, q1];
            let eb = ob.edges[l] as usize;
            let either = am.either.zip(bm.either);
            if either.is_some_and(|(x, y)| !x.edges[ea].overlaps(&y.edges[eb])) || !wanted(&verts) {
                continue;
            }
            let layers = layer_mask(cull.layers, |y| {
                am.edge_boxes[y][ea].overlaps(&bm.edge_boxes[y][eb])
            });
            if layers == 0 {
                continue;
            }
            out.push(Candidate {
                kind: Kind::EdgeEdge,
                verts,
                layers: cull.bound.refine(Kind::EdgeEdge, &verts, layers),
            });
        }
    }
}

/// The [`Candidate::layers`] mask of a test: bit `l` set for each of the first `layers` layers
/// whose cull `pass(l)` passes.
#[inline]
fn layer_mask(layers: usize, pass: impl Fn(usize) -> bool) -> u8 {
    (0..layers).fold(0, |mask, l| mask | (u8::from(pass(l)) << l))
}

/// Per triangle its three edge indices (edge k joins corners k and k+1), and
/// the owner triangle of every vertex and edge (the lowest-index triangle
/// holding it).
pub(super) fn ownership(
    num_vertices: usize,
    tris: &[[u32; 3]],
    edges: &[[u32; 2]],
) -> (Vec<[u32; 3]>, Vec<u32>, Vec<u32>) {
    let mut vowner = vec![u32::MAX; num_vertices];
    let mut eowner = vec![u32::MAX; edges.len()];
    let mut tri_edges = Vec::with_capacity(tris.len());
    for (t, tri) in tris.iter().enumerate() {
        let mut te = [0u32; 3];
        for k in 0..3 {
            let (a, b) = (tri[k], tri[(k + 1) % 3]);
            let key = [a.min(b), a.max(b)];
            let e = edges
                .binary_search(&key)
                .expect("every triangle edge is in the sorted edge list")
                as u32;
            te[k] = e;
            if eowner[e as usize] == u32::MAX {
                eowner[e as usize] = t as u32;
            }
            if vowner[a as usize] == u32::MAX {
                vowner[a as usize] = t as u32;
            }
        }
        tri_edges.push(te);
    }
    (tri_edges, vowner, eowner)
}

/// Unique sorted edges of a triangle list.
pub(super) fn unique_edges(tris: &[[u32; 3]]) -> Vec<[u32; 2]> {
    let mut e: Vec<[u32; 2]> = tris
        .iter()
        .flat_map(|t| (0..3).map(move |k| [t[k].min(t[(k + 1) % 3]), t[k].max(t[(k + 1) % 3])]))
        .collect();
    e.sort_unstable();
    e.dedup();
    e
}
