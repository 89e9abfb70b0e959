/* engine_api.c — the edits an engine makes between steps, checked through the C ABI
 * (tests/c_abi.rs builds it with -Wall -Wextra -Werror and runs it under valgrind):
 *
 * - velocities read back (borrowed and copied) equal the finite difference of the
 *   positions over a frame (one substep, no step control, no collider: x1 = x0 + dt v1);
 * - a teleport (weft_cloth_set_state) moves the cloth and its pins at once, reads back
 *   exactly, and the cloth then steps from there;
 * - a material change takes effect (a softer cloth stretches more), and setting the
 *   material it has changes nothing (the same state hash);
 * - gravity changed between steps takes effect (with gravity zeroed the resting flag stays
 *   put; turned along +z it swings out of its plane).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft.h"

#include "check.h"

/* A flag: G x G vertices, 0.3 m square, vertical in the x-y plane, its top row pinned. */
#define G 8
#define N (G * G)
static float positions[3 * N];
static uint32_t triangles[6 * (G - 1) * (G - 1)];
static uint32_t top[G];

static void build_flag(void) {
  for (int j = 0; j < G; j++) {
    for (int i = 0; i < G; i++) {
      float *p = &positions[3 * (j * G + i)];
      p[0] = 0.3f * (float)i / (float)(G - 1) - 0.15f;
      p[1] = 1.0f - 0.3f * (float)j / (float)(G - 1);
      /* A small bow out of plane so the flag swings. */
      p[2] = 0.02f * (float)j / (float)(G - 1);
    }
  }
  uint32_t *t = triangles;
  for (uint32_t j = 0; j + 1 < G; j++) {
    for (uint32_t i = 0; i + 1 < G; i++) {
      uint32_t a = j * G + i;
      uint32_t q[6] = {a, a + G, a + G + 1, a, a + G + 1, a + 1};
      memcpy(t, q, sizeof q);
      t += 6;
    }
  }
  for (uint32_t i = 0; i < G; i++) top[i] = i;
}

static const float DT = 1.0f / 60.0f;

/* A world with one flag: one substep, no step control. */
static weft_world *make_world(weft_cloth *cloth) {
  weft_world_desc wd;
  CHECK(weft_world_desc_default(&wd));
  wd.substeps = 1;
  wd.max_halvings = 0;
  /* The world's own pool, joined by weft_world_destroy (valgrind sees every thread end). */
  wd.worker_threads = 1;
  weft_world *w = NULL;
  CHECK(weft_world_create(&wd, &w));
  weft_cloth_desc cd;
  CHECK(weft_cloth_desc_default(&cd));
  cd.vertex_count = N;
  cd.positions = positions;
  cd.triangle_count = 2 * (G - 1) * (G - 1);
  cd.triangles = triangles;
  cd.name = "flag";
  CHECK(weft_cloth_create(w, &cd, cloth));
  CHECK(weft_cloth_set_pins(w, *cloth, top, NULL, G));
  return w;
}

static void step(weft_world *w, int frames) {
  weft_step_stats st;
  memset(&st, 0, sizeof st);
  st.size = sizeof st;
  for (int f = 0; f < frames; f++) {
    CHECK(weft_world_step(w, DT, &st));
    /* These worlds hold one Baraff–Witkin cloth: the stats say so. */
    EXPECT_TRUE(st.baraff_witkin_cloths == 1 && st.isometric_cloths == 0,
                "stats: %u Baraff-Witkin and %u isometric cloths", st.baraff_witkin_cloths,
                st.isometric_cloths);
  }
}

static uint64_t hash_of(const weft_world *w) {
  uint64_t h = 0;
  CHECK(weft_world_state_hash(w, &h));
  return h;
}

/* The lowest y of the cloth. */
static float lowest(weft_world *w, weft_cloth c) {
  const float *x = NULL;
  uint32_t n = 0;
  CHECK(weft_cloth_positions(w, c, &x, &n));
  float y = INFINITY;
  for (uint32_t i = 0; i < n; i++) y = fminf(y, x[3 * i + 1]);
  return y;
}

static void velocities_are_the_finite_difference(void) {
  weft_cloth c;
  weft_world *w = make_world(&c);
  static float x0[3 * N], x1[3 * N], v[3 * N];
  step(w, 5);
  float worst = 0.0f, fastest = 0.0f;
  for (int f = 0; f < 10; f++) {
    CHECK(weft_cloth_copy_positions(w, c, x0, N));
    step(w, 1);
    CHECK(weft_cloth_copy_positions(w, c, x1, N));
    const float *view = NULL;
    uint32_t n = 0;
    CHECK(weft_cloth_velocities(w, c, &view, &n));
    CHECK(weft_cloth_copy_velocities(w, c, v, N));
    EXPECT_TRUE(n == N && memcmp(view, v, sizeof v) == 0, "the view and the copy differ");
    for (int i = 0; i < 3 * N; i++) {
      float fd = (x1[i] - x0[i]) / DT;
      float err = fabsf(v[i] - fd);
      worst = fmaxf(worst, err);
      fastest = fmaxf(fastest, fabsf(v[i]));
      EXPECT_TRUE(err <= 1e-4f + 1e-4f * fabsf(v[i]), "frame %d component %d: v %g, fd %g", f,
                  i, (double)v[i], (double)fd);
    }
  }
  EXPECT_TRUE(fastest > 0.05f, "the flag hardly moves (%g m/s)", (double)fastest);
  printf("velocities: largest |v - dx/dt| %.3g m/s, largest |v| %.3g m/s\n", (double)worst,
         (double)fastest);
  CHECK(weft_world_destroy(w));
}

static void teleport_then_step(void) {
  weft_cloth c;
  weft_world *w = make_world(&c);
  step(w, 10);
  static float x[3 * N], v[3 * N], back[3 * N];
  CHECK(weft_cloth_copy_positions(w, c, x, N));
  const float shift[3] = {2.0f, 0.5f, -1.0f};
  for (int i = 0; i < N; i++) {
    for (int k = 0; k < 3; k++) x[3 * i + k] += shift[k];
    v[3 * i] = 0.0f;
    v[3 * i + 1] = 0.0f;
    v[3 * i + 2] = 0.25f; /* a push along z */
  }
  CHECK(weft_cloth_set_state(w, c, x, v, N));
  CHECK(weft_cloth_copy_positions(w, c, back, N));
  EXPECT_TRUE(memcmp(back, x, sizeof x) == 0, "positions do not read back");
  CHECK(weft_cloth_copy_velocities(w, c, back, N));
  EXPECT_TRUE(memcmp(back, v, sizeof v) == 0, "velocities do not read back");
  step(w, 1);
  CHECK(weft_cloth_copy_positions(w, c, back, N));
  float moved = 0.0f;
  for (int i = 0; i < N; i++) {
    for (int k = 0; k < 3; k++) {
      float d = fabsf(back[3 * i + k] - x[3 * i + k]);
      if (i < G) {
        /* Pins moved with the cloth and hold there exactly. */
        EXPECT_TRUE(d == 0.0f, "pin %d is %g m off its new place", i, (double)d);
      }
      moved = fmaxf(moved, d);
    }
  }
  /* One frame from the new state: at most a few cm from it (0.25 m/s and gravity over 1/60 s
   * plus the flag's swing), nowhere near the 2 m jump. */
  EXPECT_TRUE(moved < 0.03f, "a vertex moved %g m in the frame after the teleport",
              (double)moved);
  step(w, 20);
  CHECK(weft_cloth_copy_positions(w, c, back, N));
  float mean_z = 0.0f;
  for (int i = 0; i < N; i++) mean_z += back[3 * i + 2] / (float)N;
  EXPECT_TRUE(mean_z > shift[2] + 0.01f, "the push along z did not carry (mean z %g)",
              (double)mean_z);
  printf("teleport: largest move in the first frame %.3g m\n", (double)moved);
  CHECK(weft_world_destroy(w));
}

static void material_change_takes_effect(void) {
  weft_cloth ca, cb, cc;
  weft_world *reference = make_world(&ca);
  weft_world *same = make_world(&cb);
  weft_world *soft = make_world(&cc);
  weft_material m;
  CHECK(weft_cloth_material(same, cb, &m));
  CHECK(weft_cloth_set_material(same, cb, &m));
  weft_material s = m;
  s.stretch_u /= 100.0;
  s.stretch_v /= 100.0;
  s.shear /= 100.0;
  CHECK(weft_cloth_set_material(soft, cc, &s));
  weft_material back;
  CHECK(weft_cloth_material(soft, cc, &back));
  EXPECT_TRUE(memcmp(&back, &s, sizeof s) == 0, "the material does not read back");
  step(reference, 40);
  step(same, 40);
  step(soft, 40);
  EXPECT_TRUE(hash_of(reference) == hash_of(same), "setting the same material changed the run");
  float stiff_low = lowest(reference, ca), soft_low = lowest(soft, cc);
  /* The soft flag hangs lower: its stretch springs give under its weight. */
  EXPECT_TRUE(soft_low < stiff_low - 0.005f, "lowest point soft %g, as created %g",
              (double)soft_low, (double)stiff_low);
  printf("material: lowest point %.4f m as created, %.4f m softened\n", (double)stiff_low,
         (double)soft_low);
  CHECK(weft_world_destroy(reference));
  CHECK(weft_world_destroy(same));
  CHECK(weft_world_destroy(soft));
}

static void gravity_change_takes_effect(void) {
  weft_cloth c;
  weft_world *w = make_world(&c);
  const float zero[3] = {0.0f, 0.0f, 0.0f};
  CHECK(weft_world_set_gravity(w, zero));
  static float x0[3 * N], v0[3 * N], x1[3 * N];
  for (int i = 0; i < 3 * N; i++) v0[i] = 0.0f;
  CHECK(weft_cloth_set_state(w, c, NULL, v0, N));
  CHECK(weft_cloth_copy_positions(w, c, x0, N));
  step(w, 10);
  CHECK(weft_cloth_copy_positions(w, c, x1, N));
  float drift = 0.0f;
  for (int i = 0; i < 3 * N; i++) drift = fmaxf(drift, fabsf(x1[i] - x0[i]));
  EXPECT_TRUE(drift < 1e-3f, "with no gravity the resting flag moved %g m", (double)drift);
  /* Gravity along +z: the hanging flag swings out of its plane. */
  const float sideways[3] = {0.0f, 0.0f, 5.0f};
  CHECK(weft_world_set_gravity(w, sideways));
  step(w, 10);
  CHECK(weft_cloth_copy_positions(w, c, x1, N));
  float swing = x1[3 * (N - 1) + 2] - x0[3 * (N - 1) + 2];
  EXPECT_TRUE(swing > 0.01f, "with gravity along +z the free corner moved %g m along z",
              (double)swing);
  CHECK(weft_world_destroy(w));
}

int main(void) {
  build_flag();
  velocities_are_the_finite_difference();
  teleport_then_step();
  material_change_takes_effect();
  gravity_change_takes_effect();
  if (failures != 0) {
    fprintf(stderr, "engine_api: %d checks failed\n", failures);
    return 1;
  }
  printf("engine_api: all checks passed\n");
  return 0;
}
