/* drape.c — a host program driving weft through its C ABI.
 *
 * Builds the drape-65 scene (samples/drape.toml) from its own arrays: a
 * 1 m x 1 m cloth of 65 x 65 vertices with alternating diagonals, horizontal
 * at y = 0.45, over a static sphere of radius 0.3 at the origin. Steps 180
 * frames at 60 Hz, prints the stats every 30 frames and the state hash, which
 * equals `weft run samples/drape.toml`'s (tests/c_abi.rs checks it).
 *
 *   gcc -std=c99 -Wall -Wextra -Werror -Iinclude samples/c/drape.c \
 *       target/release/libweft.a -lpthread -ldl -lm -o drape
 *
 * Usage: drape [frames]   (default 180)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "weft.h"

#define N 65

/* Prints the failing call and weft's message, then exits. */
static void check(weft_status status, const char *what) {
  if (status != WEFT_STATUS_OK) {
    fprintf(stderr, "drape: %s failed (status %u): %s\n", what,
            (unsigned)status, weft_last_error());
    exit(1);
  }
}

int main(int argc, char **argv) {
  int frames = argc > 1 ? atoi(argv[1]) : 180;
  if (frames < 1) {
    fprintf(stderr, "drape: frames must be positive\n");
    return 2;
  }

  /* The grid, as weft's generator makes it: vertex (i, j) at
   * centre + (s - 1/2) size u + (t - 1/2) size v with s = i/(N-1), t = j/(N-1),
   * u = +x, v = -z; rest (u, v) = (s size, t size); two triangles per cell,
   * the diagonal alternating like a checkerboard. The float expressions are
   * evaluated in the same order as weft's, so the state is bit-identical. */
  static float positions[3 * N * N];
  static float uvs[2 * N * N];
  static uint32_t triangles[6 * (N - 1) * (N - 1)];
  const float size = 1.0f, cx = 0.0f, cy = 0.45f, cz = 0.0f;
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

  /* The world: drape.toml's solver settings. */
  weft_world_desc wd;
  check(weft_world_desc_default(&wd), "weft_world_desc_default");
  wd.substeps = 2;
  wd.cg_max_iterations = 100;
  weft_world *world = NULL;
  check(weft_world_create(&wd, &world), "weft_world_create");

  /* The cloth: drape.toml's material and collision settings. */
  weft_cloth_desc cd;
  check(weft_cloth_desc_default(&cd), "weft_cloth_desc_default");
  cd.vertex_count = N * N;
  cd.positions = positions;
  cd.triangle_count = 2 * (N - 1) * (N - 1);
  cd.triangles = triangles;
  cd.uvs = uvs;
  cd.density = 0.1f;
  cd.thickness = 0.004f;
  cd.friction = 0.3f;
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
  cd.name = "sheet";
  weft_cloth cloth;
  check(weft_cloth_create(world, &cd, &cloth), "weft_cloth_create");

  weft_collider_desc kd;
  check(weft_collider_desc_default(&kd), "weft_collider_desc_default");
  kd.shape = WEFT_SHAPE_SPHERE;
  kd.radius = 0.3f;
  kd.friction = 0.3f;
  weft_collider sphere;
  check(weft_collider_create(world, &kd, &sphere), "weft_collider_create");

  /* The engine loop: step, read stats, read the mesh without a copy. */
  const float dt = 1.0f / 60.0f;
  weft_step_stats stats;
  stats.size = sizeof stats;
  for (int frame = 1; frame <= frames; frame++) {
    check(weft_world_step(world, dt, &stats), "weft_world_step");
    const float *x = NULL;
    const float *n = NULL;
    uint32_t count = 0;
    check(weft_cloth_positions(world, cloth, &x, &count), "weft_cloth_positions");
    check(weft_cloth_normals(world, cloth, &n, &count), "weft_cloth_normals");
    if (frame % 30 == 0 || frame == frames) {
      printf("frame %3d  %7.2f ms (assemble %.2f, solve %.2f, collide %.2f)  "
             "cg %u (max %u, residual %.1e)  contacts %u  ccd %u  zones %u  "
             "strain %.4f  deadline %s  centre y %.4f  normal y %.3f\n",
             frame, stats.frame_ms, stats.assemble_ms, stats.solve_ms,
             stats.collide_ms, stats.cg_iterations, stats.cg_max_iterations,
             stats.cg_residual, stats.contacts, stats.ccd_hits,
             stats.impact_zones, stats.max_strain,
             stats.deadline_hit ? "hit" : "met",
             x[3 * (count / 2) + 1], n[3 * (count / 2) + 1]);
    }
  }

  uint64_t hash = 0;
  check(weft_world_state_hash(world, &hash), "weft_world_state_hash");
  printf("state_hash %016" PRIx64 "\n", hash);
  check(weft_world_destroy(world), "weft_world_destroy");
  return 0;
}
