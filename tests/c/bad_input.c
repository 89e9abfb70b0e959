/* bad_input.c — every weft_* function fed bad arguments (tests/c_abi.rs runs
 * it under valgrind memcheck).
 *
 * NULL pointers, stale and foreign handles, out-of-range indices, NaN and
 * infinite coordinates, zero and huge counts, descriptors of the wrong size:
 * each call must return its error status (checked exactly), leave a message
 * in weft_last_error(), crash nothing, and leave the world usable: valid
 * frames step afterwards and the state stays finite. Everything is destroyed
 * at the end, so valgrind must see no leak.
 *
 * Usage: bad_input <path of samples/drape-33.toml>
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft.h"

static int failures = 0;
static int checks = 0;

/* Compares a status with the expected one; a failure is reported, not fatal,
 * so one run lists every mismatch. */
static void expect(weft_status got, weft_status want, const char *call, int line) {
  checks++;
  if (got != want) {
    failures++;
    fprintf(stderr, "bad_input.c:%d: %s returned %u, expected %u (last error: %s)\n",
            line, call, (unsigned)got, (unsigned)want, weft_last_error());
    return;
  }
  if (want != WEFT_STATUS_OK && strlen(weft_last_error()) == 0) {
    failures++;
    fprintf(stderr, "bad_input.c:%d: %s failed without a message\n", line, call);
  }
}

#define EXPECT(call, status) expect((call), (status), #call, __LINE__)
#define OK(call) EXPECT(call, WEFT_STATUS_OK)

/* The world's state hash (0 and a failure if it cannot be read). */
static uint64_t hash_of(const weft_world *w) {
  uint64_t h = 0;
  if (weft_world_state_hash(w, &h) != WEFT_STATUS_OK) {
    failures++;
    fprintf(stderr, "weft_world_state_hash failed: %s\n", weft_last_error());
  }
  return h;
}

/* A refused call: its exact status, and the world's state hash unchanged by it. */
#define REFUSED(w, call, status)                                                        \
  do {                                                                                  \
    uint64_t before_ = hash_of(w);                                                      \
    EXPECT(call, status);                                                               \
    if (hash_of(w) != before_) {                                                        \
      failures++;                                                                       \
      fprintf(stderr, "bad_input.c:%d: %s changed the state hash\n", __LINE__, #call); \
    }                                                                                   \
  } while (0)

/* A small flag: G x G vertices, 0.2 m square, in the x-z plane at y = 0.5. */
#define G 6
static float positions[3 * G * G];
static uint32_t triangles[6 * (G - 1) * (G - 1)];

static void build_grid(void) {
  for (int j = 0; j < G; j++) {
    for (int i = 0; i < G; i++) {
      float *p = &positions[3 * (j * G + i)];
      p[0] = 0.2f * (float)i / (float)(G - 1) - 0.1f;
      p[1] = 0.5f;
      p[2] = 0.1f - 0.2f * (float)j / (float)(G - 1);
    }
  }
  uint32_t *t = triangles;
  for (uint32_t j = 0; j + 1 < G; j++) {
    for (uint32_t i = 0; i + 1 < G; i++) {
      uint32_t a = j * G + i;
      uint32_t q[6] = {a, a + 1, a + G + 1, a, a + G + 1, a + G};
      memcpy(t, q, sizeof q);
      t += 6;
    }
  }
}

static weft_cloth_desc cloth_desc(void) {
  weft_cloth_desc d;
  weft_status s = weft_cloth_desc_default(&d);
  if (s != WEFT_STATUS_OK) {
    fprintf(stderr, "weft_cloth_desc_default failed\n");
    exit(2);
  }
  d.vertex_count = G * G;
  d.positions = positions;
  d.triangle_count = 2 * (G - 1) * (G - 1);
  d.triangles = triangles;
  return d;
}

static int all_finite(const float *x, uint32_t n) {
  for (uint32_t i = 0; i < 3 * n; i++) {
    if (!isfinite(x[i])) return 0;
  }
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bad_input <samples/drape-33.toml>\n");
    return 2;
  }
  const char *scene_path = argv[1];
  const float nan = NAN;
  const float inf = INFINITY;
  build_grid();

  /* Infallible calls. */
  if (weft_version() == NULL || strlen(weft_version()) == 0) {
    fprintf(stderr, "weft_version is empty\n");
    failures++;
  }
  if (weft_last_error() == NULL) {
    fprintf(stderr, "weft_last_error is NULL\n");
    failures++;
  }

  /* ---- Descriptor defaults ---- */
  EXPECT(weft_world_desc_default(NULL), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_cloth_desc_default(NULL), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_collider_desc_default(NULL), WEFT_STATUS_NULL_ARGUMENT);

  /* ---- World creation ---- */
  weft_world_desc wd;
  OK(weft_world_desc_default(&wd));
  weft_world *world = NULL;
  EXPECT(weft_world_create(NULL, &world), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_world_create(&wd, NULL), WEFT_STATUS_NULL_ARGUMENT);
  {
    weft_world_desc bad = wd;
    bad.size = sizeof bad - 4;
    EXPECT(weft_world_create(&bad, &world), WEFT_STATUS_DESCRIPTOR_SIZE);
    if (world != NULL) failures++;
    bad.size = 0;
    EXPECT(weft_world_create(&bad, &world), WEFT_STATUS_DESCRIPTOR_SIZE);
    bad = wd;
    bad.gravity[1] = nan;
    EXPECT(weft_world_create(&bad, &world), WEFT_STATUS_NON_FINITE);
    bad = wd;
    bad.gravity[0] = -inf;
    EXPECT(weft_world_create(&bad, &world), WEFT_STATUS_NON_FINITE);
    bad = wd;
    bad.frame_budget_ms = (double)inf;
    EXPECT(weft_world_create(&bad, &world), WEFT_STATUS_NON_FINITE);
    bad = wd;
    bad.frame_budget_ms = -1.0;
    EXPECT(weft_world_create(&bad, &world), WEFT_STATUS_INVALID_ARGUMENT);
    bad = wd;
    bad.substeps = 0;
    EXPECT(weft_world_create(&bad, &world), WEFT_STATUS_INVALID_ARGUMENT);
    bad = wd;
    bad.substeps = 0xFFFFFFFFu;
    EXPECT(weft_world_create(&bad, &world), WEFT_STATUS_INVALID_ARGUMENT);
    bad = wd;
    bad.worker_threads = 0xFFFFFFFFu;
    EXPECT(weft_world_create(&bad, &world), WEFT_STATUS_INVALID_ARGUMENT);
    bad = wd;
    bad.cg_max_iterations = 0;
    EXPECT(weft_world_create(&bad, &world), WEFT_STATUS_INVALID_ARGUMENT);
    bad = wd;
    bad.newton_max_iterations = 0;
    EXPECT(weft_world_create(&bad, &world), WEFT_STATUS_INVALID_ARGUMENT);
    bad = wd;
    bad.max_stretch_change = nan;
    EXPECT(weft_world_create(&bad, &world), WEFT_STATUS_NON_FINITE);
    bad = wd;
    bad.max_halvings = 1000;
    EXPECT(weft_world_create(&bad, &world), WEFT_STATUS_INVALID_ARGUMENT);
    /* The governor and the wind. */
    bad = wd;
    bad.governor = 7;
    EXPECT(weft_world_create(&bad, &world), WEFT_STATUS_INVALID_ARGUMENT);
    bad = wd;
    bad.governor = WEFT_GOVERNOR_ADAPTIVE; /* with no frame budget */
    EXPECT(weft_world_create(&bad, &world), WEFT_STATUS_INVALID_ARGUMENT);
    weft_world_desc windy = wd;
    windy.wind.enabled = 1;
    windy.wind.velocity[0] = 3.0f;
    windy.wind.gust = 0.3f;
    bad = windy;
    bad.wind.enabled = 2;
    EXPECT(weft_world_create(&bad, &world), WEFT_STATUS_INVALID_ARGUMENT);
    bad = windy;
    bad.wind.velocity[2] = nan;
    EXPECT(weft_world_create(&bad, &world), WEFT_STATUS_NON_FINITE);
    bad = windy;
    bad.wind.density = 0.0f;
    EXPECT(weft_world_create(&bad, &world), WEFT_STATUS_INVALID_ARGUMENT);
    bad = windy;
    bad.wind.density = nan;
    EXPECT(weft_world_create(&bad, &world), WEFT_STATUS_NON_FINITE);
    bad = windy;
    bad.wind.drag = -1.0f;
    EXPECT(weft_world_create(&bad, &world), WEFT_STATUS_INVALID_ARGUMENT);
    bad = windy;
    bad.wind.drag = inf;
    EXPECT(weft_world_create(&bad, &world), WEFT_STATUS_NON_FINITE);
    bad = windy;
    bad.wind.skin = -0.1f;
    EXPECT(weft_world_create(&bad, &world), WEFT_STATUS_INVALID_ARGUMENT);
    bad = windy;
    bad.wind.skin = nan;
    EXPECT(weft_world_create(&bad, &world), WEFT_STATUS_NON_FINITE);
    bad = windy;
    bad.wind.gust = 1.5f;
    EXPECT(weft_world_create(&bad, &world), WEFT_STATUS_INVALID_ARGUMENT);
    bad = windy;
    bad.wind.gust = -0.5f;
    EXPECT(weft_world_create(&bad, &world), WEFT_STATUS_INVALID_ARGUMENT);
    bad = windy;
    bad.wind.gust = nan;
    EXPECT(weft_world_create(&bad, &world), WEFT_STATUS_NON_FINITE);
    bad = windy;
    bad.wind.gust_period_s = 0.0f;
    EXPECT(weft_world_create(&bad, &world), WEFT_STATUS_INVALID_ARGUMENT);
    bad = windy;
    bad.wind.gust_period_s = -inf;
    EXPECT(weft_world_create(&bad, &world), WEFT_STATUS_NON_FINITE);
    if (world != NULL) failures++;
    /* Valid: wind and the adaptive governor with a budget. */
    windy.governor = WEFT_GOVERNOR_ADAPTIVE;
    windy.frame_budget_ms = 50.0;
    OK(weft_world_create(&windy, &world));
    OK(weft_world_destroy(world));
    world = NULL;
  }
  wd.worker_threads = 2;
  OK(weft_world_create(&wd, &world));
  weft_world *other = NULL;
  OK(weft_world_create(&wd, &other));
  EXPECT(weft_world_destroy(NULL), WEFT_STATUS_NULL_ARGUMENT);

  /* ---- Cloth creation ---- */
  weft_cloth cloth;
  weft_cloth_desc cd = cloth_desc();
  EXPECT(weft_cloth_create(NULL, &cd, &cloth), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_cloth_create(world, NULL, &cloth), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_cloth_create(world, &cd, NULL), WEFT_STATUS_NULL_ARGUMENT);
  {
    weft_cloth_desc bad = cd;
    bad.size = sizeof bad + 8;
    EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_DESCRIPTOR_SIZE);
    bad = cd;
    bad.positions = NULL;
    EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_NULL_ARGUMENT);
    bad = cd;
    bad.triangles = NULL;
    EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_NULL_ARGUMENT);
    bad = cd;
    bad.vertex_count = 0;
    EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_ARGUMENT);
    bad = cd;
    bad.vertex_count = 0xFFFFFFFFu;
    EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_ARGUMENT);
    bad = cd;
    bad.triangle_count = 0;
    EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_ARGUMENT);
    bad = cd;
    bad.triangle_count = 0xFFFFFFFFu;
    EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_ARGUMENT);
    bad = cd;
    bad.model = 2; /* no such model */
    EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_UNSUPPORTED);
    bad = cd;
    bad.model = 0xFFFFFFFFu;
    EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_UNSUPPORTED);
    bad = cd;
    bad.density = 0.0f;
    EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_ARGUMENT);
    bad = cd;
    bad.density = nan;
    EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_NON_FINITE);
    bad = cd;
    bad.thickness = inf;
    EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_NON_FINITE);
    bad = cd;
    bad.initial_velocity[2] = nan;
    EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_NON_FINITE);
    bad = cd;
    bad.material.stretch_u = (double)nan;
    EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_NON_FINITE);
    bad = cd;
    bad.material.shear = -1.0;
    EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_ARGUMENT);
    bad = cd;
    bad.material.rest_stretch_v = 0.0;
    EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_ARGUMENT);
    bad = cd;
    bad.baraff_witkin.rest_angles = 7;
    EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_ARGUMENT);
    bad = cd;
    bad.baraff_witkin.jacobian = 7;
    EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_ARGUMENT);
    bad = cd;
    bad.baraff_witkin.preconditioner = 7;
    EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_ARGUMENT);
    bad = cd;
    bad.collision.response_passes = 17;
    EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_ARGUMENT);
    bad = cd;
    bad.baraff_witkin.cg_tolerance = 0.0;
    EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_ARGUMENT);
    bad = cd;
    bad.baraff_witkin.cg_max_iterations = 0;
    EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_ARGUMENT);
    bad = cd;
    bad.collision.self_collision = 2;
    EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_ARGUMENT);
    bad = cd;
    bad.collision.strain_limit = 1.5f;
    EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_ARGUMENT);
    /* Bending model and integration, velocity smoothing. */
    bad = cd;
    bad.bending_model = 9;
    EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_ARGUMENT);
    bad = cd;
    bad.bending_integration = 9;
    EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_ARGUMENT);
    bad = cd;
    bad.velocity_smoothing = -0.5f;
    EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_ARGUMENT);
    bad = cd;
    bad.velocity_smoothing = nan;
    EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_NON_FINITE);
    /* Isometric settings: each value NaN/infinite, negative or out of range,
     * refused with either model (they are checked whatever the model). */
    for (int model = 0; model < 2; model++) {
      weft_cloth_desc iso = cd;
      iso.model = model == 0 ? WEFT_MODEL_BARAFF_WITKIN : WEFT_MODEL_ISOMETRIC;
      bad = iso;
      bad.isometric.strain_tolerance = 0.0;
      EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_ARGUMENT);
      bad.isometric.strain_tolerance = 1.0;
      EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_ARGUMENT);
      bad.isometric.strain_tolerance = -1e-3;
      EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_ARGUMENT);
      bad.isometric.strain_tolerance = (double)nan;
      EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_NON_FINITE);
      bad = iso;
      bad.isometric.newton_max_iterations = 0;
      EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_ARGUMENT);
      bad = iso;
      bad.isometric.cg_max_iterations = 0;
      EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_ARGUMENT);
      bad = iso;
      bad.isometric.cg_tolerance = (double)inf;
      EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_NON_FINITE);
      bad.isometric.cg_tolerance = -1e-6;
      EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_ARGUMENT);
      bad.isometric.cg_tolerance = 2.0;
      EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_ARGUMENT);
      bad = iso;
      bad.isometric.coupling = 5;
      EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_ARGUMENT);
      bad = iso;
      bad.isometric.integrator = 5;
      EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_ARGUMENT);
      bad = iso;
      bad.isometric.second_target = 5;
      EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_ARGUMENT);
      bad = iso;
      bad.isometric.contacts = 5;
      EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_ARGUMENT);
      bad = iso;
      bad.isometric.strain_test = 5;
      EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_ARGUMENT);
      bad = iso;
      bad.isometric.rest_shape = 5;
      EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_ARGUMENT);
      bad = iso;
      bad.isometric.friction_compliance = -1e-3;
      EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_ARGUMENT);
      bad.isometric.friction_compliance = (double)nan;
      EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_NON_FINITE);
      bad = iso;
      bad.isometric.boundary_compliance = -1e-4;
      EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_ARGUMENT);
      bad.isometric.boundary_compliance = (double)inf;
      EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_NON_FINITE);
      bad = iso;
      bad.isometric.conforming_compliance = -1e-4;
      EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_ARGUMENT);
      bad.isometric.conforming_compliance = (double)nan;
      EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_NON_FINITE);
      bad = iso;
      bad.isometric.proximal_weight = -1e-6;
      EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_ARGUMENT);
      bad.isometric.proximal_weight = (double)nan;
      EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_NON_FINITE);
      bad = iso;
      bad.isometric.contact_compliance = -1e-2;
      EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_ARGUMENT);
      bad.isometric.contact_compliance = (double)inf;
      EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_NON_FINITE);
      bad = iso;
      bad.isometric.contact_margin = -1e-2;
      EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_ARGUMENT);
      bad.isometric.contact_margin = (double)nan;
      EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_NON_FINITE);
      bad = iso;
      bad.isometric.bending_stiffness = -1e-5;
      EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_ARGUMENT);
      bad.isometric.bending_stiffness = (double)-inf;
      EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_NON_FINITE);
    }

    /* NaN and infinite coordinates, out-of-range and degenerate triangles. */
    float xs[3 * G * G];
    uint32_t ts[6 * (G - 1) * (G - 1)];
    memcpy(xs, positions, sizeof xs);
    memcpy(ts, triangles, sizeof ts);
    bad = cd;
    bad.positions = xs;
    bad.triangles = ts;
    xs[3 * 7 + 1] = nan;
    EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_NON_FINITE);
    xs[3 * 7 + 1] = inf;
    EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_NON_FINITE);
    xs[3 * 7 + 1] = 0.5f;
    ts[4] = G * G;
    EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_OUT_OF_RANGE);
    ts[4] = 0xFFFFFFFFu;
    EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_OUT_OF_RANGE);
    ts[4] = ts[3]; /* a triangle with a repeated corner */
    EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_MESH);
    memcpy(ts, triangles, sizeof ts);

    /* Optional arrays: NaN (u, v), non-positive and NaN masses. */
    float uv[2 * G * G];
    for (int i = 0; i < G * G; i++) {
      uv[2 * i] = xs[3 * i];
      uv[2 * i + 1] = -xs[3 * i + 2];
    }
    bad = cd;
    bad.uvs = uv;
    uv[5] = nan;
    EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_NON_FINITE);
    float m[G * G];
    for (int i = 0; i < G * G; i++) m[i] = 0.001f;
    bad = cd;
    bad.masses = m;
    m[3] = 0.0f;
    EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_ARGUMENT);
    m[3] = -inf;
    EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_NON_FINITE);
    m[3] = 0.001f;
    bad.model = WEFT_MODEL_ISOMETRIC; /* masses would not cover the subdivision */
    EXPECT(weft_cloth_create(world, &bad, &cloth), WEFT_STATUS_INVALID_ARGUMENT);
    bad.model = WEFT_MODEL_BARAFF_WITKIN;
    bad.density = nan; /* ignored with per-vertex masses */
    weft_cloth massive;
    OK(weft_cloth_create(world, &bad, &massive));
    OK(weft_cloth_destroy(world, massive));
    EXPECT(weft_cloth_destroy(world, massive), WEFT_STATUS_STALE_HANDLE);
  }
  cd.friction = 0.4f;
  OK(weft_cloth_create(world, &cd, &cloth));
  weft_cloth foreign;
  OK(weft_cloth_create(other, &cd, &foreign));
  uint32_t n = 0;
  OK(weft_cloth_vertex_count(world, cloth, &n));
  if (n != G * G) {
    fprintf(stderr, "vertex count %u, expected %u\n", n, G * G);
    failures++;
  }

  /* A destroyed cloth and its replacement in the same slot. */
  weft_cloth gone;
  OK(weft_cloth_create(world, &cd, &gone));
  OK(weft_cloth_destroy(world, gone));
  weft_cloth reborn;
  OK(weft_cloth_create(world, &cd, &reborn));
  if (reborn.index != gone.index || reborn.generation == gone.generation) {
    fprintf(stderr, "slot not reused with a new generation\n");
    failures++;
  }
  weft_cloth zero = {0, 0, 0};
  weft_cloth wild = cloth;
  wild.index = 0xFFFFFFFFu;

  /* ---- Cloth calls with bad handles and pointers ---- */
  const weft_cloth bad_handles[4] = {gone, foreign, zero, wild};
  float buffer[3 * G * G];
  const float *view = NULL;
  uint32_t tri_buffer[6 * (G - 1) * (G - 1)];
  const uint32_t *tri_view = NULL;
  uint32_t vertex = 3;
  float target[3] = {0.0f, 0.6f, 0.0f};
  for (int k = 0; k < 4; k++) {
    weft_cloth h = bad_handles[k];
    EXPECT(weft_cloth_destroy(world, h), WEFT_STATUS_STALE_HANDLE);
    EXPECT(weft_cloth_vertex_count(world, h, &n), WEFT_STATUS_STALE_HANDLE);
    EXPECT(weft_cloth_set_pins(world, h, &vertex, target, 1), WEFT_STATUS_STALE_HANDLE);
    EXPECT(weft_cloth_unpin(world, h, &vertex, 1), WEFT_STATUS_STALE_HANDLE);
    EXPECT(weft_cloth_clear_pins(world, h), WEFT_STATUS_STALE_HANDLE);
    EXPECT(weft_cloth_set_collides_with(world, cloth, h, 0), WEFT_STATUS_STALE_HANDLE);
    EXPECT(weft_cloth_positions(world, h, &view, &n), WEFT_STATUS_STALE_HANDLE);
    EXPECT(weft_cloth_normals(world, h, &view, &n), WEFT_STATUS_STALE_HANDLE);
    EXPECT(weft_cloth_copy_positions(world, h, buffer, G * G), WEFT_STATUS_STALE_HANDLE);
    EXPECT(weft_cloth_copy_normals(world, h, buffer, G * G), WEFT_STATUS_STALE_HANDLE);
    EXPECT(weft_cloth_triangle_count(world, h, &n), WEFT_STATUS_STALE_HANDLE);
    EXPECT(weft_cloth_triangles(world, h, &tri_view, &n), WEFT_STATUS_STALE_HANDLE);
    EXPECT(weft_cloth_copy_triangles(world, h, tri_buffer, 2 * (G - 1) * (G - 1)),
           WEFT_STATUS_STALE_HANDLE);
  }
  EXPECT(weft_cloth_destroy(NULL, cloth), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_cloth_vertex_count(NULL, cloth, &n), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_cloth_vertex_count(world, cloth, NULL), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_cloth_positions(NULL, cloth, &view, &n), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_cloth_positions(world, cloth, NULL, &n), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_cloth_positions(world, cloth, &view, NULL), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_cloth_normals(NULL, cloth, &view, &n), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_cloth_normals(world, cloth, NULL, &n), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_cloth_normals(world, cloth, &view, NULL), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_cloth_copy_positions(NULL, cloth, buffer, G * G), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_cloth_copy_positions(world, cloth, NULL, G * G), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_cloth_copy_positions(world, cloth, buffer, 0), WEFT_STATUS_BUFFER_TOO_SMALL);
  EXPECT(weft_cloth_copy_positions(world, cloth, buffer, G * G - 1),
         WEFT_STATUS_BUFFER_TOO_SMALL);
  EXPECT(weft_cloth_copy_normals(NULL, cloth, buffer, G * G), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_cloth_copy_normals(world, cloth, NULL, G * G), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_cloth_copy_normals(world, cloth, buffer, 1), WEFT_STATUS_BUFFER_TOO_SMALL);
  EXPECT(weft_cloth_triangle_count(NULL, cloth, &n), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_cloth_triangle_count(world, cloth, NULL), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_cloth_triangles(NULL, cloth, &tri_view, &n), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_cloth_triangles(world, cloth, NULL, &n), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_cloth_triangles(world, cloth, &tri_view, NULL), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_cloth_copy_triangles(NULL, cloth, tri_buffer, 2 * (G - 1) * (G - 1)),
         WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_cloth_copy_triangles(world, cloth, NULL, 2 * (G - 1) * (G - 1)),
         WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_cloth_copy_triangles(world, cloth, tri_buffer, 2 * (G - 1) * (G - 1) - 1),
         WEFT_STATUS_BUFFER_TOO_SMALL);
  OK(weft_cloth_triangle_count(world, cloth, &n));
  if (n != 2 * (G - 1) * (G - 1)) {
    fprintf(stderr, "triangle count %u, expected %u\n", n, 2 * (G - 1) * (G - 1));
    failures++;
  }
  OK(weft_cloth_copy_triangles(world, cloth, tri_buffer, 2 * (G - 1) * (G - 1)));
  OK(weft_cloth_triangles(world, cloth, &tri_view, &n));
  if (n != 2 * (G - 1) * (G - 1) || memcmp(tri_view, triangles, sizeof triangles) != 0 ||
      memcmp(tri_buffer, triangles, sizeof triangles) != 0) {
    fprintf(stderr, "the triangles read back differ from the input\n");
    failures++;
  }

  /* ---- Pins ---- */
  uint32_t pins[2] = {0, G - 1};
  float goals[6] = {-0.1f, 0.55f, 0.1f, 0.1f, 0.55f, 0.1f};
  EXPECT(weft_cloth_set_pins(NULL, cloth, pins, goals, 2), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_cloth_set_pins(world, cloth, NULL, goals, 2), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_cloth_set_pins(world, cloth, pins, goals, 0), WEFT_STATUS_INVALID_ARGUMENT);
  EXPECT(weft_cloth_set_pins(world, cloth, pins, goals, 0xFFFFFFFFu),
         WEFT_STATUS_INVALID_ARGUMENT);
  {
    uint32_t out_of_range[2] = {0, G * G};
    EXPECT(weft_cloth_set_pins(world, cloth, out_of_range, goals, 2), WEFT_STATUS_OUT_OF_RANGE);
    out_of_range[1] = 0xFFFFFFFFu;
    EXPECT(weft_cloth_set_pins(world, cloth, out_of_range, NULL, 2), WEFT_STATUS_OUT_OF_RANGE);
    float bad_goals[6];
    memcpy(bad_goals, goals, sizeof goals);
    bad_goals[4] = nan;
    EXPECT(weft_cloth_set_pins(world, cloth, pins, bad_goals, 2), WEFT_STATUS_NON_FINITE);
    bad_goals[4] = -inf;
    EXPECT(weft_cloth_set_pins(world, cloth, pins, bad_goals, 2), WEFT_STATUS_NON_FINITE);
  }
  /* None of the refused calls pinned anything. */
  EXPECT(weft_cloth_unpin(world, cloth, pins, 1), WEFT_STATUS_INVALID_ARGUMENT);
  OK(weft_cloth_set_pins(world, cloth, pins, goals, 2));
  EXPECT(weft_cloth_unpin(NULL, cloth, pins, 1), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_cloth_unpin(world, cloth, NULL, 1), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_cloth_unpin(world, cloth, pins, 0), WEFT_STATUS_INVALID_ARGUMENT);
  EXPECT(weft_cloth_unpin(world, cloth, pins, 0xFFFFFFFFu), WEFT_STATUS_INVALID_ARGUMENT);
  {
    uint32_t some[2] = {0, 7}; /* 7 is not pinned */
    EXPECT(weft_cloth_unpin(world, cloth, some, 2), WEFT_STATUS_INVALID_ARGUMENT);
    some[1] = G * G;
    EXPECT(weft_cloth_unpin(world, cloth, some, 2), WEFT_STATUS_OUT_OF_RANGE);
  }
  EXPECT(weft_cloth_clear_pins(NULL, cloth), WEFT_STATUS_NULL_ARGUMENT);
  /* Cloth pairs: not a cloth with itself, a flag of 0 or 1 only. */
  EXPECT(weft_cloth_set_collides_with(NULL, cloth, cloth, 0), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_cloth_set_collides_with(world, cloth, cloth, 0), WEFT_STATUS_INVALID_ARGUMENT);
  EXPECT(weft_cloth_set_collides_with(world, cloth, cloth, 2), WEFT_STATUS_INVALID_ARGUMENT);

  /* ---- Colliders ---- */
  weft_collider_desc kd;
  OK(weft_collider_desc_default(&kd));
  kd.shape = WEFT_SHAPE_SPHERE;
  kd.radius = 0.05f;
  kd.pose.position[1] = 0.3f;
  weft_collider ball;
  EXPECT(weft_collider_create(NULL, &kd, &ball), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_collider_create(world, NULL, &ball), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_collider_create(world, &kd, NULL), WEFT_STATUS_NULL_ARGUMENT);
  {
    weft_collider_desc bad = kd;
    bad.size = 1;
    EXPECT(weft_collider_create(world, &bad, &ball), WEFT_STATUS_DESCRIPTOR_SIZE);
    bad = kd;
    bad.shape = 99;
    EXPECT(weft_collider_create(world, &bad, &ball), WEFT_STATUS_INVALID_ARGUMENT);
    bad = kd;
    bad.radius = nan;
    EXPECT(weft_collider_create(world, &bad, &ball), WEFT_STATUS_NON_FINITE);
    bad = kd;
    bad.radius = -1.0f;
    EXPECT(weft_collider_create(world, &bad, &ball), WEFT_STATUS_INVALID_ARGUMENT);
    bad = kd;
    bad.shape = WEFT_SHAPE_CAPSULE;
    bad.half_length = inf;
    EXPECT(weft_collider_create(world, &bad, &ball), WEFT_STATUS_NON_FINITE);
    bad = kd;
    bad.shape = WEFT_SHAPE_BOX;
    bad.half_extents[0] = 0.1f;
    bad.half_extents[1] = 0.0f;
    bad.half_extents[2] = 0.1f;
    EXPECT(weft_collider_create(world, &bad, &ball), WEFT_STATUS_INVALID_ARGUMENT);
    bad.half_extents[1] = nan;
    EXPECT(weft_collider_create(world, &bad, &ball), WEFT_STATUS_NON_FINITE);
    bad = kd;
    bad.pose.position[0] = nan;
    EXPECT(weft_collider_create(world, &bad, &ball), WEFT_STATUS_NON_FINITE);
    bad = kd;
    bad.pose.rotation[3] = 0.0f; /* the zero quaternion */
    EXPECT(weft_collider_create(world, &bad, &ball), WEFT_STATUS_INVALID_ARGUMENT);
    bad = kd;
    bad.pose.rotation[1] = inf;
    EXPECT(weft_collider_create(world, &bad, &ball), WEFT_STATUS_NON_FINITE);
    bad = kd;
    bad.friction = -0.5f;
    EXPECT(weft_collider_create(world, &bad, &ball), WEFT_STATUS_INVALID_ARGUMENT);
    bad = kd;
    bad.thickness = 0.01f; /* analytic shapes take no thickness */
    EXPECT(weft_collider_create(world, &bad, &ball), WEFT_STATUS_INVALID_ARGUMENT);
    /* Triangle meshes: NULL arrays, zero and huge counts, bad indices. */
    float tet_x[12] = {0, 0, 0, 0.1f, 0, 0, 0, 0.1f, 0, 0, 0, 0.1f};
    uint32_t tet_t[12] = {0, 2, 1, 0, 1, 3, 0, 3, 2, 1, 2, 3};
    bad = kd;
    bad.shape = WEFT_SHAPE_TRIANGLE_MESH;
    bad.mesh_vertex_count = 4;
    bad.mesh_positions = tet_x;
    bad.mesh_triangle_count = 4;
    bad.mesh_triangles = tet_t;
    bad.pose.position[1] = -1.0f;
    weft_collider_desc mesh = bad;
    bad.mesh_positions = NULL;
    EXPECT(weft_collider_create(world, &bad, &ball), WEFT_STATUS_NULL_ARGUMENT);
    bad = mesh;
    bad.mesh_triangles = NULL;
    EXPECT(weft_collider_create(world, &bad, &ball), WEFT_STATUS_NULL_ARGUMENT);
    bad = mesh;
    bad.mesh_vertex_count = 0;
    EXPECT(weft_collider_create(world, &bad, &ball), WEFT_STATUS_INVALID_ARGUMENT);
    bad = mesh;
    bad.mesh_triangle_count = 0xFFFFFFFFu;
    EXPECT(weft_collider_create(world, &bad, &ball), WEFT_STATUS_INVALID_ARGUMENT);
    bad = mesh;
    tet_t[7] = 4;
    EXPECT(weft_collider_create(world, &bad, &ball), WEFT_STATUS_OUT_OF_RANGE);
    tet_t[7] = 3;
    tet_x[4] = inf;
    EXPECT(weft_collider_create(world, &bad, &ball), WEFT_STATUS_NON_FINITE);
    tet_x[4] = 0.0f;
    bad = mesh;
    bad.thickness = -0.001f;
    EXPECT(weft_collider_create(world, &bad, &ball), WEFT_STATUS_INVALID_ARGUMENT);
    bad.thickness = nan;
    EXPECT(weft_collider_create(world, &bad, &ball), WEFT_STATUS_NON_FINITE);
    bad.thickness = inf;
    EXPECT(weft_collider_create(world, &bad, &ball), WEFT_STATUS_NON_FINITE);
    mesh.thickness = 0.002f;
    weft_collider tet;
    OK(weft_collider_create(world, &mesh, &tet));
    weft_pose tet_pose = mesh.pose;
    tet_pose.position[1] = -0.9f;
    OK(weft_collider_set_pose(world, tet, &tet_pose));
  }
  OK(weft_collider_create(world, &kd, &ball));
  weft_collider ground;
  {
    weft_collider_desc plane;
    OK(weft_collider_desc_default(&plane));
    plane.pose.position[1] = -0.5f;
    OK(weft_collider_create(world, &plane, &ground));
  }
  weft_collider old;
  OK(weft_collider_create(world, &kd, &old));
  OK(weft_collider_destroy(world, old));
  weft_collider elsewhere;
  OK(weft_collider_create(other, &kd, &elsewhere));
  weft_collider nobody = {0, 0, 0};
  const weft_collider bad_colliders[3] = {old, elsewhere, nobody};
  weft_pose pose = kd.pose;
  pose.position[1] = 0.31f;
  for (int k = 0; k < 3; k++) {
    EXPECT(weft_collider_destroy(world, bad_colliders[k]), WEFT_STATUS_STALE_HANDLE);
    EXPECT(weft_collider_set_pose(world, bad_colliders[k], &pose), WEFT_STATUS_STALE_HANDLE);
  }
  EXPECT(weft_collider_destroy(NULL, ball), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_collider_set_pose(NULL, ball, &pose), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_collider_set_pose(world, ball, NULL), WEFT_STATUS_NULL_ARGUMENT);
  {
    weft_pose bad = pose;
    bad.position[2] = nan;
    EXPECT(weft_collider_set_pose(world, ball, &bad), WEFT_STATUS_NON_FINITE);
    bad = pose;
    bad.rotation[0] = -inf;
    EXPECT(weft_collider_set_pose(world, ball, &bad), WEFT_STATUS_NON_FINITE);
    bad = pose;
    memset(bad.rotation, 0, sizeof bad.rotation);
    EXPECT(weft_collider_set_pose(world, ball, &bad), WEFT_STATUS_INVALID_ARGUMENT);
  }
  OK(weft_collider_set_pose(world, ball, &pose));

  /* ---- Handle listings ---- */
  weft_cloth cloth_list[4];
  weft_collider collider_list[4];
  uint32_t listed = 0;
  EXPECT(weft_world_cloths(NULL, cloth_list, 4, &listed), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_world_cloths(world, NULL, 4, &listed), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_world_cloths(world, cloth_list, 4, NULL), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_world_cloths(world, cloth_list, 1, &listed), WEFT_STATUS_BUFFER_TOO_SMALL);
  if (listed != 2) {
    fprintf(stderr, "weft_world_cloths counted %u, expected 2\n", listed);
    failures++;
  }
  OK(weft_world_cloths(world, cloth_list, 4, &listed));
  EXPECT(weft_world_colliders(NULL, collider_list, 4, &listed), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_world_colliders(world, NULL, 4, &listed), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_world_colliders(world, collider_list, 4, NULL), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_world_colliders(world, collider_list, 0, &listed), WEFT_STATUS_BUFFER_TOO_SMALL);
  OK(weft_world_colliders(world, collider_list, 4, &listed));
  if (listed != 3) {
    fprintf(stderr, "weft_world_colliders counted %u, expected 3\n", listed);
    failures++;
  }

  /* ---- Stepping ---- */
  weft_step_stats stats;
  memset(&stats, 0, sizeof stats);
  stats.size = sizeof stats;
  EXPECT(weft_world_step(NULL, 1.0f / 60.0f, &stats), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_world_step(world, 1.0f / 60.0f, NULL), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_world_step(world, nan, &stats), WEFT_STATUS_NON_FINITE);
  EXPECT(weft_world_step(world, inf, &stats), WEFT_STATUS_NON_FINITE);
  EXPECT(weft_world_step(world, 0.0f, &stats), WEFT_STATUS_INVALID_ARGUMENT);
  EXPECT(weft_world_step(world, -0.01f, &stats), WEFT_STATUS_INVALID_ARGUMENT);
  /* A size inside the struct that no release had. */
  stats.size = (uint32_t)offsetof(weft_step_stats, row_strain);
  EXPECT(weft_world_step(world, 1.0f / 60.0f, &stats), WEFT_STATUS_DESCRIPTOR_SIZE);
  stats.size = sizeof stats;
  uint64_t hash = 0;
  EXPECT(weft_world_state_hash(NULL, &hash), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_world_state_hash(world, NULL), WEFT_STATUS_NULL_ARGUMENT);

  /* ---- Scene files ---- */
  weft_world *scene = NULL;
  weft_scene_info info;
  memset(&info, 0, sizeof info);
  info.size = sizeof info;
  EXPECT(weft_scene_load(NULL, 0, &scene, &info), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_scene_load(scene_path, 0, NULL, &info), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_scene_load(scene_path, 0, &scene, NULL), WEFT_STATUS_NULL_ARGUMENT);
  EXPECT(weft_scene_load("/nonexistent/scene.toml", 0, &scene, &info), WEFT_STATUS_SCENE);
  EXPECT(weft_scene_load("", 0, &scene, &info), WEFT_STATUS_SCENE);
  EXPECT(weft_scene_load(scene_path, 0xFFFFFFFFu, &scene, &info),
         WEFT_STATUS_INVALID_ARGUMENT);
  info.size = 3;
  EXPECT(weft_scene_load(scene_path, 0, &scene, &info), WEFT_STATUS_DESCRIPTOR_SIZE);
  info.size = sizeof info;
  if (scene != NULL) failures++;
  OK(weft_scene_load(scene_path, 1, &scene, &info));
  if (info.cloth_count != 1 || info.collider_count != 1 || info.frames == 0 || info.fps <= 0.0f) {
    fprintf(stderr, "scene info: %u cloths, %u colliders, %u frames at %g fps\n",
            info.cloth_count, info.collider_count, info.frames, (double)info.fps);
    failures++;
  }
  /* A scene world's handles are foreign to `world`. */
  OK(weft_world_cloths(scene, cloth_list, 4, &listed));
  EXPECT(weft_cloth_vertex_count(world, cloth_list[0], &n), WEFT_STATUS_STALE_HANDLE);
  OK(weft_world_destroy(scene));

  /* ---- Structs from an older weft.h (before the appended fields): refused
   * by size, and never read past their end (valgrind checks the heap blocks,
   * which hold only the older struct). ---- */
  {
    size_t old_world = offsetof(weft_world_desc, governor);
    weft_world_desc *ow = malloc(old_world);
    size_t old_cloth = offsetof(weft_cloth_desc, isometric);
    weft_cloth_desc *oc = malloc(old_cloth);
    size_t old_collider = offsetof(weft_collider_desc, thickness);
    weft_collider_desc *ok = malloc(old_collider);
    size_t old_stats = offsetof(weft_step_stats, newton_iterations);
    weft_step_stats *os = malloc(old_stats);
    if (ow == NULL || oc == NULL || ok == NULL || os == NULL) {
      fprintf(stderr, "malloc failed\n");
      return 2;
    }
    memcpy(ow, &wd, old_world);
    ow->size = (uint32_t)old_world;
    memcpy(oc, &cd, old_cloth);
    oc->size = (uint32_t)old_cloth;
    memcpy(ok, &kd, old_collider);
    ok->size = (uint32_t)old_collider;
    memset(os, 0, old_stats);
    os->size = (uint32_t)old_stats;
    weft_world *never = NULL;
    EXPECT(weft_world_create(ow, &never), WEFT_STATUS_DESCRIPTOR_SIZE);
    if (never != NULL) failures++;
    weft_cloth none;
    EXPECT(weft_cloth_create(world, oc, &none), WEFT_STATUS_DESCRIPTOR_SIZE);
    weft_collider nothing;
    EXPECT(weft_collider_create(world, ok, &nothing), WEFT_STATUS_DESCRIPTOR_SIZE);
    EXPECT(weft_world_step(world, 1.0f / 60.0f, os), WEFT_STATUS_DESCRIPTOR_SIZE);
    free(ow);
    free(oc);
    free(ok);
    free(os);
  }

  /* ---- An isometric cloth: the subdivided mesh through every per-vertex call ---- */
  {
    enum { V = G * G, E = 2 * G * (G - 1) + (G - 1) * (G - 1), T = 2 * (G - 1) * (G - 1) };
    weft_world *iso_world = NULL;
    OK(weft_world_create(&wd, &iso_world));
    weft_cloth_desc id = cloth_desc();
    id.model = WEFT_MODEL_ISOMETRIC;
    weft_cloth iso;
    OK(weft_cloth_create(iso_world, &id, &iso));
    uint32_t count = 0;
    OK(weft_cloth_vertex_count(iso_world, iso, &count));
    if (count != V + E) {
      fprintf(stderr, "isometric vertex count %u, expected %d\n", count, V + E);
      failures++;
    }
    OK(weft_cloth_triangle_count(iso_world, iso, &count));
    if (count != 4 * T) {
      fprintf(stderr, "isometric triangle count %u, expected %d\n", count, 4 * T);
      failures++;
    }
    /* Buffers sized for the caller's mesh are too small. */
    EXPECT(weft_cloth_copy_positions(iso_world, iso, buffer, V), WEFT_STATUS_BUFFER_TOO_SMALL);
    EXPECT(weft_cloth_copy_normals(iso_world, iso, buffer, V + E - 1),
           WEFT_STATUS_BUFFER_TOO_SMALL);
    EXPECT(weft_cloth_copy_triangles(iso_world, iso, tri_buffer, T),
           WEFT_STATUS_BUFFER_TOO_SMALL);
    /* Pins: input vertices keep their indices; midpoints follow up to V + E - 1. */
    uint32_t iso_pins[3] = {0, G - 1, V + E - 1};
    OK(weft_cloth_set_pins(iso_world, iso, iso_pins, NULL, 3));
    uint32_t past[1] = {V + E};
    EXPECT(weft_cloth_set_pins(iso_world, iso, past, NULL, 1), WEFT_STATUS_OUT_OF_RANGE);
    EXPECT(weft_cloth_unpin(iso_world, iso, past, 1), WEFT_STATUS_OUT_OF_RANGE);
    OK(weft_cloth_unpin(iso_world, iso, &iso_pins[2], 1));
    /* A cloth handle of one world is foreign to the other. */
    EXPECT(weft_cloth_vertex_count(world, iso, &count), WEFT_STATUS_STALE_HANDLE);
    weft_step_stats iso_stats;
    memset(&iso_stats, 0, sizeof iso_stats);
    iso_stats.size = sizeof iso_stats;
    OK(weft_world_step(iso_world, 1.0f / 60.0f, &iso_stats));
    if (iso_stats.newton_iterations == 0 || !isfinite(iso_stats.base_strain_midpoint) ||
        !isfinite(iso_stats.bending_energy)) {
      fprintf(stderr, "isometric stats: %u Newton iterations, strain %g, bending %g\n",
              iso_stats.newton_iterations, iso_stats.base_strain_midpoint,
              iso_stats.bending_energy);
      failures++;
    }
    /* The stats say which models stepped; an isometric cloth has no Baraff–Witkin material. */
    if (iso_stats.isometric_cloths != 1 || iso_stats.baraff_witkin_cloths != 0) {
      fprintf(stderr, "isometric stats: %u isometric and %u Baraff-Witkin cloths\n",
              iso_stats.isometric_cloths, iso_stats.baraff_witkin_cloths);
      failures++;
    }
    weft_material iso_material;
    EXPECT(weft_cloth_material(iso_world, iso, &iso_material), WEFT_STATUS_UNSUPPORTED);
    OK(weft_cloth_positions(iso_world, iso, &view, &count));
    if (count != V + E || !all_finite(view, count) || view[1] != 0.5f) {
      fprintf(stderr, "isometric positions after a step are wrong\n");
      failures++;
    }
    OK(weft_cloth_destroy(iso_world, iso));
    OK(weft_world_destroy(iso_world));
  }

  /* ---- Absurd but finite values: refused with a status that is not WEFT_STATUS_PANIC,
   * the state hash unchanged by every refused call, and the world steps afterwards ---- */
  {
    weft_world_desc huge = wd;
    huge.gravity[1] = -1e30f;
    weft_world *never = NULL;
    EXPECT(weft_world_create(&huge, &never), WEFT_STATUS_INVALID_ARGUMENT);
    huge = wd;
    huge.wind.enabled = 1;
    huge.wind.velocity[0] = 1e30f;
    EXPECT(weft_world_create(&huge, &never), WEFT_STATUS_INVALID_ARGUMENT);
    huge = wd;
    huge.gravity[1] = -1000.0f; /* finite, 100 g: past WEFT_MAX_GRAVITY */
    EXPECT(weft_world_create(&huge, &never), WEFT_STATUS_INVALID_ARGUMENT);
    if (never != NULL) failures++;

    weft_world *hw = NULL;
    OK(weft_world_create(&wd, &hw));
    weft_cloth_desc hd = cloth_desc();
    weft_cloth hc;
    OK(weft_cloth_create(hw, &hd, &hc));
    uint32_t corner[1] = {0};
    OK(weft_cloth_set_pins(hw, hc, corner, NULL, 1));
    weft_collider_desc sd;
    OK(weft_collider_desc_default(&sd));
    sd.shape = WEFT_SHAPE_SPHERE;
    sd.radius = 0.05f;
    sd.pose.position[1] = 0.3f;
    weft_collider hs;
    OK(weft_collider_create(hw, &sd, &hs));
    weft_step_stats hst;
    memset(&hst, 0, sizeof hst);
    hst.size = sizeof hst;
    OK(weft_world_step(hw, 1.0f / 60.0f, &hst));

    /* Cloths: positions and uvs scaled by 1e30 and 1e-30, degenerate densities, huge
     * thickness and velocity, a NaN velocity, tiny masses. */
    static float scaled[3 * G * G];
    static float suv[2 * G * G];
    const float scales[2] = {1e30f, 1e-30f};
    weft_cloth none;
    for (int k = 0; k < 2; k++) {
      for (int i = 0; i < 3 * G * G; i++) scaled[i] = positions[i] * scales[k];
      weft_cloth_desc bad = hd;
      bad.positions = scaled;
      REFUSED(hw, weft_cloth_create(hw, &bad, &none), WEFT_STATUS_INVALID_ARGUMENT);
      for (int i = 0; i < G * G; i++) {
        suv[2 * i] = positions[3 * i] * scales[k];
        suv[2 * i + 1] = -positions[3 * i + 2] * scales[k];
      }
      bad = hd;
      bad.uvs = suv;
      REFUSED(hw, weft_cloth_create(hw, &bad, &none), WEFT_STATUS_INVALID_ARGUMENT);
    }
    {
      weft_cloth_desc bad = hd;
      bad.density = 0.0f;
      REFUSED(hw, weft_cloth_create(hw, &bad, &none), WEFT_STATUS_INVALID_ARGUMENT);
      bad.density = -1.0f;
      REFUSED(hw, weft_cloth_create(hw, &bad, &none), WEFT_STATUS_INVALID_ARGUMENT);
      bad.density = nan;
      REFUSED(hw, weft_cloth_create(hw, &bad, &none), WEFT_STATUS_NON_FINITE);
      bad.density = 1e-30f; /* lumped masses below the range */
      REFUSED(hw, weft_cloth_create(hw, &bad, &none), WEFT_STATUS_INVALID_ARGUMENT);
      bad = hd;
      bad.thickness = inf;
      REFUSED(hw, weft_cloth_create(hw, &bad, &none), WEFT_STATUS_NON_FINITE);
      bad.thickness = 1e30f;
      REFUSED(hw, weft_cloth_create(hw, &bad, &none), WEFT_STATUS_INVALID_ARGUMENT);
      bad = hd;
      bad.initial_velocity[1] = nan;
      REFUSED(hw, weft_cloth_create(hw, &bad, &none), WEFT_STATUS_NON_FINITE);
      bad.initial_velocity[1] = 1e30f;
      REFUSED(hw, weft_cloth_create(hw, &bad, &none), WEFT_STATUS_INVALID_ARGUMENT);
      static float tiny[G * G];
      for (int i = 0; i < G * G; i++) tiny[i] = 1e-30f;
      bad = hd;
      bad.masses = tiny;
      REFUSED(hw, weft_cloth_create(hw, &bad, &none), WEFT_STATUS_INVALID_ARGUMENT);
    }
    /* A sliver: a strip of 2 x 21 vertices, rows 5 cm apart, one row 1 um wide. */
    {
      static float strip_x[3 * 42];
      static uint32_t strip_t[3 * 40];
      for (int r = 0; r < 21; r++) {
        float y = r <= 10 ? 0.05f * (float)r : 0.05f * (float)(r - 1) + 1e-6f;
        for (int c = 0; c < 2; c++) {
          strip_x[3 * (2 * r + c)] = 0.05f * (float)c;
          strip_x[3 * (2 * r + c) + 1] = 1.0f - y;
          strip_x[3 * (2 * r + c) + 2] = 0.0f;
        }
      }
      for (uint32_t r = 0; r < 20; r++) {
        uint32_t a = 2 * r;
        uint32_t q[6] = {a, a + 1, a + 3, a, a + 3, a + 2};
        memcpy(&strip_t[6 * r], q, sizeof q);
      }
      weft_cloth_desc strip = hd;
      strip.vertex_count = 42;
      strip.positions = strip_x;
      strip.triangle_count = 40;
      strip.triangles = strip_t;
      strip.collision.self_collision = 1;
      REFUSED(hw, weft_cloth_create(hw, &strip, &none), WEFT_STATUS_INVALID_MESH);
      if (strstr(weft_last_error(), "face 20: a sliver") == NULL) {
        fprintf(stderr, "sliver message: %s\n", weft_last_error());
        failures++;
      }
    }
    /* Colliders: a 1e-30 and a 1e30 sphere, a far position, a huge quaternion. */
    {
      weft_collider_desc bad = sd;
      weft_collider nothing;
      bad.radius = 1e-30f;
      bad.pose.position[0] = positions[0];
      bad.pose.position[1] = positions[1];
      bad.pose.position[2] = positions[2];
      REFUSED(hw, weft_collider_create(hw, &bad, &nothing), WEFT_STATUS_INVALID_ARGUMENT);
      bad.radius = 1e30f;
      REFUSED(hw, weft_collider_create(hw, &bad, &nothing), WEFT_STATUS_INVALID_ARGUMENT);
      bad = sd;
      bad.pose.position[2] = 1e30f;
      REFUSED(hw, weft_collider_create(hw, &bad, &nothing), WEFT_STATUS_INVALID_ARGUMENT);
      bad = sd;
      for (int k = 0; k < 4; k++) bad.pose.rotation[k] = 1e30f;
      REFUSED(hw, weft_collider_create(hw, &bad, &nothing), WEFT_STATUS_INVALID_ARGUMENT);
      /* A triangle mesh (a tetrahedron of 10 cm) with a 1e30 m thickness of its own. */
      float tx[12] = {0, 0, 0, 0.1f, 0, 0, 0, 0.1f, 0, 0, 0, 0.1f};
      uint32_t tt[12] = {0, 2, 1, 0, 1, 3, 0, 3, 2, 1, 2, 3};
      bad = sd;
      bad.shape = WEFT_SHAPE_TRIANGLE_MESH;
      bad.mesh_vertex_count = 4;
      bad.mesh_positions = tx;
      bad.mesh_triangle_count = 4;
      bad.mesh_triangles = tt;
      bad.thickness = 1e30f;
      REFUSED(hw, weft_collider_create(hw, &bad, &nothing), WEFT_STATUS_INVALID_ARGUMENT);
      tx[3] = 1e30f; /* a vertex beyond WEFT_MAX_COORDINATE */
      bad.thickness = 0.0f;
      REFUSED(hw, weft_collider_create(hw, &bad, &nothing), WEFT_STATUS_INVALID_ARGUMENT);
    }
    /* Poses: refused when set, and never stored: the steps after them succeed. */
    weft_pose wild = sd.pose;
    for (int k = 0; k < 4; k++) wild.rotation[k] = 1e30f;
    REFUSED(hw, weft_collider_set_pose(hw, hs, &wild), WEFT_STATUS_INVALID_ARGUMENT);
    wild = sd.pose;
    wild.rotation[3] = 2.0f; /* not a unit quaternion */
    REFUSED(hw, weft_collider_set_pose(hw, hs, &wild), WEFT_STATUS_INVALID_ARGUMENT);
    wild = sd.pose;
    wild.position[0] = 1e30f;
    REFUSED(hw, weft_collider_set_pose(hw, hs, &wild), WEFT_STATUS_INVALID_ARGUMENT);
    OK(weft_world_step(hw, 1.0f / 60.0f, &hst));
    /* A pose 1 km away is a valid place but 60 km/s over a frame: the step is refused,
     * nothing moves, and a nearer pose set afterwards is reached. */
    wild = sd.pose;
    wild.position[0] = 1000.0f;
    OK(weft_collider_set_pose(hw, hs, &wild));
    REFUSED(hw, weft_world_step(hw, 1.0f / 60.0f, &hst), WEFT_STATUS_INVALID_ARGUMENT);
    wild.position[0] = 0.01f;
    OK(weft_collider_set_pose(hw, hs, &wild));
    /* Pin targets: 1e30 refused when set; 1 km away refused by the step. */
    float far_goal[3] = {1e30f, 0.5f, 0.1f};
    REFUSED(hw, weft_cloth_set_pins(hw, hc, corner, far_goal, 1), WEFT_STATUS_INVALID_ARGUMENT);
    far_goal[0] = 1000.0f;
    OK(weft_cloth_set_pins(hw, hc, corner, far_goal, 1));
    REFUSED(hw, weft_world_step(hw, 1.0f / 60.0f, &hst), WEFT_STATUS_INVALID_ARGUMENT);
    float near_goal[3] = {positions[0], positions[1] + 0.01f, positions[2]};
    OK(weft_cloth_set_pins(hw, hc, corner, near_goal, 1));
    /* Frame lengths: denormal, zero-ish, huge (fps 1e-6), and between frames. */
    const float dts[5] = {1e-45f, 1e-38f, 1e-6f, 1e6f, 1.0f};
    for (int k = 0; k < 5; k++) {
      REFUSED(hw, weft_world_step(hw, dts[k], &hst), WEFT_STATUS_INVALID_ARGUMENT);
    }
    uint64_t before = hash_of(hw);
    for (int frame = 0; frame < 3; frame++) {
      OK(weft_world_step(hw, 1.0f / 60.0f, &hst));
    }
    if (hash_of(hw) == before) {
      fprintf(stderr, "the world did not move after the refused calls\n");
      failures++;
    }
    uint32_t hn = 0;
    const float *hv = NULL;
    OK(weft_cloth_positions(hw, hc, &hv, &hn));
    if (!all_finite(hv, hn) || hv[0] != near_goal[0] || hv[1] != near_goal[1] ||
        hv[2] != near_goal[2]) {
      fprintf(stderr, "after the refused calls the pin is not at its target\n");
      failures++;
    }

    /* ---- Edits between steps: teleport, velocities, material, gravity, wind, tracks.
     * Every refused call leaves the state hash as it was. ---- */
    {
      static float xs[3 * G * G];
      static float vs[3 * G * G];
      weft_cloth stale_cloth = hc;
      stale_cloth.generation += 7;
      OK(weft_cloth_copy_positions(hw, hc, xs, G * G));
      OK(weft_cloth_copy_velocities(hw, hc, vs, G * G));
      EXPECT(weft_cloth_copy_velocities(hw, hc, vs, G * G - 1), WEFT_STATUS_BUFFER_TOO_SMALL);
      EXPECT(weft_cloth_copy_velocities(hw, hc, NULL, G * G), WEFT_STATUS_NULL_ARGUMENT);
      EXPECT(weft_cloth_copy_velocities(NULL, hc, vs, G * G), WEFT_STATUS_NULL_ARGUMENT);
      EXPECT(weft_cloth_copy_velocities(hw, stale_cloth, vs, G * G), WEFT_STATUS_STALE_HANDLE);
      const float *vview = NULL;
      uint32_t vn = 0;
      EXPECT(weft_cloth_velocities(hw, hc, NULL, &vn), WEFT_STATUS_NULL_ARGUMENT);
      EXPECT(weft_cloth_velocities(hw, hc, &vview, NULL), WEFT_STATUS_NULL_ARGUMENT);
      EXPECT(weft_cloth_velocities(hw, stale_cloth, &vview, &vn), WEFT_STATUS_STALE_HANDLE);
      OK(weft_cloth_velocities(hw, hc, &vview, &vn));
      if (vn != G * G || memcmp(vview, vs, sizeof vs) != 0) {
        fprintf(stderr, "the velocity view and the copy differ\n");
        failures++;
      }
      REFUSED(hw, weft_cloth_set_state(NULL, hc, xs, vs, G * G), WEFT_STATUS_NULL_ARGUMENT);
      REFUSED(hw, weft_cloth_set_state(hw, hc, NULL, NULL, G * G), WEFT_STATUS_NULL_ARGUMENT);
      REFUSED(hw, weft_cloth_set_state(hw, stale_cloth, xs, vs, G * G), WEFT_STATUS_STALE_HANDLE);
      REFUSED(hw, weft_cloth_set_state(other, hc, xs, vs, G * G), WEFT_STATUS_STALE_HANDLE);
      REFUSED(hw, weft_cloth_set_state(hw, hc, xs, vs, G * G - 1), WEFT_STATUS_INVALID_ARGUMENT);
      REFUSED(hw, weft_cloth_set_state(hw, hc, xs, vs, 0xFFFFFFFFu), WEFT_STATUS_INVALID_ARGUMENT);
      float keep = xs[7];
      xs[7] = nan;
      REFUSED(hw, weft_cloth_set_state(hw, hc, xs, vs, G * G), WEFT_STATUS_NON_FINITE);
      xs[7] = 1e30f;
      REFUSED(hw, weft_cloth_set_state(hw, hc, xs, vs, G * G), WEFT_STATUS_INVALID_ARGUMENT);
      xs[7] = keep;
      keep = vs[4];
      vs[4] = inf;
      REFUSED(hw, weft_cloth_set_state(hw, hc, xs, vs, G * G), WEFT_STATUS_NON_FINITE);
      vs[4] = 1000.0f; /* past WEFT_MAX_SPEED */
      REFUSED(hw, weft_cloth_set_state(hw, hc, NULL, vs, G * G), WEFT_STATUS_INVALID_ARGUMENT);
      vs[4] = keep;

      weft_material mat;
      EXPECT(weft_cloth_material(hw, hc, NULL), WEFT_STATUS_NULL_ARGUMENT);
      EXPECT(weft_cloth_material(hw, stale_cloth, &mat), WEFT_STATUS_STALE_HANDLE);
      OK(weft_cloth_material(hw, hc, &mat));
      REFUSED(hw, weft_cloth_set_material(hw, hc, NULL), WEFT_STATUS_NULL_ARGUMENT);
      REFUSED(hw, weft_cloth_set_material(hw, stale_cloth, &mat), WEFT_STATUS_STALE_HANDLE);
      weft_material bad_mat = mat;
      bad_mat.shear = -1.0;
      REFUSED(hw, weft_cloth_set_material(hw, hc, &bad_mat), WEFT_STATUS_INVALID_ARGUMENT);
      bad_mat = mat;
      bad_mat.bend = (double)nan;
      REFUSED(hw, weft_cloth_set_material(hw, hc, &bad_mat), WEFT_STATUS_NON_FINITE);
      bad_mat = mat;
      bad_mat.rest_stretch_u = 0.0;
      REFUSED(hw, weft_cloth_set_material(hw, hc, &bad_mat), WEFT_STATUS_INVALID_ARGUMENT);
      weft_material after;
      OK(weft_cloth_material(hw, hc, &after));
      if (memcmp(&after, &mat, sizeof mat) != 0) {
        fprintf(stderr, "a refused material changed the material\n");
        failures++;
      }

      float g[3] = {0.0f, -9.81f, 0.0f};
      float g_now[3];
      OK(weft_world_gravity(hw, g_now));
      EXPECT(weft_world_gravity(hw, NULL), WEFT_STATUS_NULL_ARGUMENT);
      REFUSED(hw, weft_world_set_gravity(NULL, g), WEFT_STATUS_NULL_ARGUMENT);
      REFUSED(hw, weft_world_set_gravity(hw, NULL), WEFT_STATUS_NULL_ARGUMENT);
      g[1] = nan;
      REFUSED(hw, weft_world_set_gravity(hw, g), WEFT_STATUS_NON_FINITE);
      g[1] = -1000.0f;
      REFUSED(hw, weft_world_set_gravity(hw, g), WEFT_STATUS_INVALID_ARGUMENT);
      float g_after[3];
      OK(weft_world_gravity(hw, g_after));
      if (memcmp(g_now, g_after, sizeof g_now) != 0) {
        fprintf(stderr, "a refused gravity changed the gravity\n");
        failures++;
      }
      weft_wind wind = wd.wind;
      wind.enabled = 1;
      wind.velocity[0] = 2.0f;
      REFUSED(hw, weft_world_set_wind(hw, NULL), WEFT_STATUS_NULL_ARGUMENT);
      weft_wind bad_wind = wind;
      bad_wind.enabled = 3;
      REFUSED(hw, weft_world_set_wind(hw, &bad_wind), WEFT_STATUS_INVALID_ARGUMENT);
      bad_wind = wind;
      bad_wind.velocity[1] = nan;
      REFUSED(hw, weft_world_set_wind(hw, &bad_wind), WEFT_STATUS_NON_FINITE);
      bad_wind = wind;
      bad_wind.velocity[1] = 1e30f;
      REFUSED(hw, weft_world_set_wind(hw, &bad_wind), WEFT_STATUS_INVALID_ARGUMENT);

      weft_keyframe keys[2];
      keys[0].time = 0.0;
      keys[0].pose = sd.pose;
      keys[0].pose.position[1] = 0.0f;
      keys[1] = keys[0];
      keys[1].time = 1.0;
      keys[1].pose.position[0] = 0.1f;
      float pivot[3] = {0.0f, 0.5f, 0.0f};
      uint32_t edge[2] = {0, 1};
      uint32_t beyond[2] = {0, G * G};
      REFUSED(hw, weft_cloth_set_pin_track(hw, hc, edge, 2, pivot, NULL, 2), WEFT_STATUS_NULL_ARGUMENT);
      REFUSED(hw, weft_cloth_set_pin_track(hw, hc, edge, 2, NULL, keys, 2), WEFT_STATUS_NULL_ARGUMENT);
      REFUSED(hw, weft_cloth_set_pin_track(hw, hc, NULL, 2, pivot, keys, 2), WEFT_STATUS_NULL_ARGUMENT);
      REFUSED(hw, weft_cloth_set_pin_track(hw, hc, edge, 2, pivot, keys, 0), WEFT_STATUS_INVALID_ARGUMENT);
      REFUSED(hw, weft_cloth_set_pin_track(hw, hc, edge, 0, pivot, keys, 2), WEFT_STATUS_INVALID_ARGUMENT);
      REFUSED(hw, weft_cloth_set_pin_track(hw, hc, beyond, 2, pivot, keys, 2), WEFT_STATUS_OUT_OF_RANGE);
      REFUSED(hw, weft_cloth_set_pin_track(hw, stale_cloth, edge, 2, pivot, keys, 2), WEFT_STATUS_STALE_HANDLE);
      pivot[2] = nan;
      REFUSED(hw, weft_cloth_set_pin_track(hw, hc, edge, 2, pivot, keys, 2), WEFT_STATUS_NON_FINITE);
      pivot[2] = 0.0f;
      keys[1].time = 0.0; /* not increasing */
      REFUSED(hw, weft_cloth_set_pin_track(hw, hc, edge, 2, pivot, keys, 2), WEFT_STATUS_INVALID_ARGUMENT);
      keys[1].time = (double)nan;
      REFUSED(hw, weft_cloth_set_pin_track(hw, hc, edge, 2, pivot, keys, 2), WEFT_STATUS_NON_FINITE);
      keys[1].time = 1e-4; /* 0.1 m in 0.1 ms: past WEFT_MAX_SPEED */
      REFUSED(hw, weft_cloth_set_pin_track(hw, hc, edge, 2, pivot, keys, 2), WEFT_STATUS_INVALID_ARGUMENT);
      REFUSED(hw, weft_collider_set_track(hw, hs, keys, 2), WEFT_STATUS_INVALID_ARGUMENT);
      keys[1].time = 1.0;
      keys[1].pose.rotation[3] = 3.0f; /* not a unit quaternion */
      REFUSED(hw, weft_cloth_set_pin_track(hw, hc, edge, 2, pivot, keys, 2), WEFT_STATUS_INVALID_ARGUMENT);
      REFUSED(hw, weft_collider_set_track(hw, hs, keys, 2), WEFT_STATUS_INVALID_ARGUMENT);
      keys[1].pose.rotation[3] = 1.0f;
      weft_collider stale_collider = hs;
      stale_collider.generation += 3;
      REFUSED(hw, weft_collider_set_track(hw, stale_collider, keys, 2), WEFT_STATUS_STALE_HANDLE);
      REFUSED(hw, weft_collider_set_track(hw, hs, NULL, 2), WEFT_STATUS_NULL_ARGUMENT);
      /* Valid edits, then steps. */
      OK(weft_world_set_wind(hw, &wind));
      g[1] = -5.0f;
      OK(weft_world_set_gravity(hw, g));
      OK(weft_cloth_set_pin_track(hw, hc, edge, 2, pivot, keys, 2));
      OK(weft_cloth_set_state(hw, hc, xs, NULL, G * G));
      OK(weft_cloth_set_state(hw, hc, NULL, vs, G * G));
      OK(weft_world_step(hw, 1.0f / 60.0f, &hst));
      OK(weft_cloth_copy_velocities(hw, hc, vs, G * G));
      if (!all_finite(vs, G * G)) {
        fprintf(stderr, "velocities after the edits are not finite\n");
        failures++;
      }
    }
    OK(weft_world_destroy(hw));
  }

  /* ---- After all of that, the world still steps ---- */
  OK(weft_cloth_vertex_count(world, cloth, &n));
  for (int frame = 0; frame < 3; frame++) {
    OK(weft_world_step(world, 1.0f / 60.0f, &stats));
    if (stats.substeps == 0) {
      fprintf(stderr, "a step with no substeps\n");
      failures++;
    }
  }
  OK(weft_cloth_positions(world, cloth, &view, &n));
  if (n != G * G || !all_finite(view, n)) {
    fprintf(stderr, "positions after the steps are not finite\n");
    failures++;
  }
  /* Pin targets reached exactly at the end of the frame. */
  if (view[0] != goals[0] || view[1] != goals[1] || view[2] != goals[2]) {
    fprintf(stderr, "pin 0 at (%g, %g, %g), target (%g, %g, %g)\n", (double)view[0],
            (double)view[1], (double)view[2], (double)goals[0], (double)goals[1],
            (double)goals[2]);
    failures++;
  }
  OK(weft_cloth_copy_normals(world, cloth, buffer, G * G));
  if (!all_finite(buffer, G * G)) {
    fprintf(stderr, "normals are not finite\n");
    failures++;
  }
  OK(weft_cloth_unpin(world, cloth, pins, 1));
  OK(weft_cloth_clear_pins(world, cloth));
  OK(weft_collider_destroy(world, ground));
  OK(weft_world_step(world, 1.0f / 60.0f, &stats));
  OK(weft_world_state_hash(world, &hash));
  OK(weft_cloth_destroy(world, cloth));
  OK(weft_world_step(world, 1.0f / 60.0f, &stats));

  OK(weft_world_destroy(world));
  OK(weft_world_destroy(other));

  if (failures != 0) {
    fprintf(stderr, "bad_input: %d of %d checks failed\n", failures, checks);
    return 1;
  }
  printf("bad_input: all checks passed (%d)\n", checks);
  return 0;
}
