/* layers.c — several cloths of one world colliding with each other, through
 * weft's C ABI.
 *
 * Builds the layers scene (samples/layers.toml) from its own arrays: three
 * 1 m x 1 m cloths of 33 x 33 vertices stacked 5 cm apart (y = 0.45, 0.50,
 * 0.55, each shifted a little in x and z), falling onto a static sphere of
 * radius 0.3 at the origin. The cloths of a world collide with each other
 * unless told not to: with the argument `sewn`, the middle sheet is a lining
 * sewn to the bottom one (weft_cloth_set_collides_with(..., 0)), and the two
 * pass through each other where they meet. Prints the stats every 30 frames
 * and the state hash; without `sewn` it equals
 * `weft run samples/layers.toml`'s for the same frames (tests/c_abi.rs checks
 * both).
 *
 *   gcc -std=c99 -Wall -Wextra -Werror -Iinclude samples/c/layers.c \
 *       target/release/libweft.a -lpthread -ldl -lm -o layers
 *
 * Usage: layers [frames] [sewn]   (default 180 frames, every pair colliding)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft.h"

#define N 33
#define SHEETS 3

/* Prints the failing call and weft's message, then exits. */
static void check(weft_status status, const char *what) {
  if (status != WEFT_STATUS_OK) {
    fprintf(stderr, "layers: %s failed (status %u): %s\n", what,
            (unsigned)status, weft_last_error());
    exit(1);
  }
}

/* One sheet's grid, as weft's generator makes it: vertex (i, j) at
 * centre + (s - 1/2) size u + (t - 1/2) size v with s = i/(N-1), t = j/(N-1),
 * u = +x, v = -z; rest (u, v) = (s size, t size). The float expressions are
 * evaluated in the same order as weft's, so the state is bit-identical. */
static void sheet(float cx, float cy, float cz, float *positions, float *uvs) {
  const float size = 1.0f;
  const float ux = 1.0f, uy = 0.0f, uz = 0.0f, vx = 0.0f, vy = 0.0f, vz = -1.0f;
  for (int j = 0; j < N; j++) {
    float t = (float)j / (float)(N - 1);
    for (int i = 0; i < N; i++) {
      float s = (float)i / (float)(N - 1);
      float a = (s - 0.5f) * size, b = (t - 0.5f) * size;
      float *p = &positions[3 * (j * N + i)];
      p[0] = (cx + a * ux) + b * vx;
      p[1] = (cy + a * uy) + b * vy;
      p[2] = (cz + a * uz) + b * vz;
      uvs[2 * (j * N + i)] = s * size;
      uvs[2 * (j * N + i) + 1] = t * size;
    }
  }
}

int main(int argc, char **argv) {
  int frames = argc > 1 ? atoi(argv[1]) : 180;
  if (frames < 1) {
    fprintf(stderr, "layers: frames must be positive\n");
    return 2;
  }
  int sewn = argc > 2 && strcmp(argv[2], "sewn") == 0;

  /* Two triangles per cell, the diagonal alternating like a checkerboard
   * (the same for every sheet). */
  static uint32_t triangles[6 * (N - 1) * (N - 1)];
  uint32_t *tri = triangles;
  for (uint32_t j = 0; j + 1 < N; j++) {
    for (uint32_t i = 0; i + 1 < N; i++) {
      uint32_t v00 = j * N + i, v10 = v00 + 1, v01 = v00 + N, v11 = v00 + N + 1;
      if ((i + j) % 2 == 0) {
        uint32_t t6[6] = {v00, v10, v11, v00, v11, v01};
        for (int k = 0; k < 6; k++) *tri++ = t6[k];
      } else {
        uint32_t t6[6] = {v00, v10, v01, v10, v11, v01};
        for (int k = 0; k < 6; k++) *tri++ = t6[k];
      }
    }
  }

  /* The world: layers.toml's solver settings. */
  weft_world_desc wd;
  check(weft_world_desc_default(&wd), "weft_world_desc_default");
  wd.substeps = 2;
  wd.cg_max_iterations = 100;
  weft_world *world = NULL;
  check(weft_world_create(&wd, &world), "weft_world_create");

  /* The sheets, bottom to top: layers.toml's placement, material and
   * collision settings. Creation order is the order in which the cloths meet
   * inside a shared collision stage. */
  static const char *names[SHEETS] = {"bottom", "middle", "top"};
  static const float centres[SHEETS][3] = {
      {0.0f, 0.45f, 0.0f}, {0.013f, 0.5f, 0.007f}, {-0.009f, 0.55f, 0.015f}};
  static const float friction[SHEETS] = {0.3f, 0.4f, 0.3f};
  static float positions[SHEETS][3 * N * N];
  static float uvs[SHEETS][2 * N * N];
  weft_cloth cloths[SHEETS];
  for (int k = 0; k < SHEETS; k++) {
    sheet(centres[k][0], centres[k][1], centres[k][2], positions[k], uvs[k]);
    weft_cloth_desc cd;
    check(weft_cloth_desc_default(&cd), "weft_cloth_desc_default");
    cd.vertex_count = N * N;
    cd.positions = positions[k];
    cd.triangle_count = 2 * (N - 1) * (N - 1);
    cd.triangles = triangles;
    cd.uvs = uvs[k];
    cd.density = 0.1f;
    cd.thickness = 0.004f;
    cd.friction = friction[k];
    cd.model = WEFT_MODEL_BARAFF_WITKIN;
    cd.material.stretch_u = 10000.0;
    cd.material.stretch_v = 10000.0;
    cd.material.shear = 1000.0;
    cd.material.bend = 1e-5;
    cd.material.stretch_damping = 0.002;
    cd.material.shear_damping = 0.002;
    cd.material.bend_damping = 0.002;
    cd.baraff_witkin.cg_max_iterations = 100;
    cd.baraff_witkin.cg_tolerance = 1e-3;
    cd.baraff_witkin.preconditioner = WEFT_PRECONDITIONER_BLOCK_IC0;
    cd.collision.self_collision = 1;
    cd.collision.ccd_rounds = 10;
    cd.collision.strain_limit = 0.0099f;
    cd.collision.strain_iterations = 3000;
    cd.name = names[k];
    check(weft_cloth_create(world, &cd, &cloths[k]), "weft_cloth_create");
  }
  /* Every pair collides by default; a lining sewn to its shell is told not
   * to (the setting is symmetric). */
  check(weft_cloth_set_collides_with(world, cloths[1], cloths[0], sewn ? 0 : 1),
        "weft_cloth_set_collides_with");

  weft_collider_desc kd;
  check(weft_collider_desc_default(&kd), "weft_collider_desc_default");
  kd.shape = WEFT_SHAPE_SPHERE;
  kd.radius = 0.3f;
  kd.friction = 0.3f;
  weft_collider sphere;
  check(weft_collider_create(world, &kd, &sphere), "weft_collider_create");

  /* The engine loop: step, read stats, read each sheet without a copy. */
  const float dt = 1.0f / 60.0f;
  weft_step_stats stats;
  stats.size = sizeof stats;
  for (int frame = 1; frame <= frames; frame++) {
    check(weft_world_step(world, dt, &stats), "weft_world_step");
    if (frame % 30 == 0 || frame == frames) {
      printf("frame %3d  %7.2f ms (collide %.2f)  ccd %u  zones %u  strain %.4f"
             "  centre y",
             frame, stats.frame_ms, stats.collide_ms, stats.ccd_hits,
             stats.impact_zones, stats.max_strain);
      for (int k = 0; k < SHEETS; k++) {
        const float *x = NULL;
        uint32_t count = 0;
        check(weft_cloth_positions(world, cloths[k], &x, &count),
              "weft_cloth_positions");
        printf(" %.4f", x[3 * (count / 2) + 1]);
      }
      printf("\n");
    }
  }

  uint64_t hash = 0;
  check(weft_world_state_hash(world, &hash), "weft_world_state_hash");
  printf("state_hash %016" PRIx64 "\n", hash);
  check(weft_world_destroy(world), "weft_world_destroy");
  return 0;
}
