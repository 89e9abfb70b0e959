/* older_header.c — a host built against an older weft.h of the same major version.
 *
 * tests/c_abi.rs compiles this file twice, against tests/c/weft_0_1/weft.h (the 0.1
 * header, frozen) and against include/weft.h, links both with this library and runs the
 * 0.1 build under valgrind. The descriptors live in heap blocks of exactly the header's
 * sizeof, so a read or write past the host's struct is a valgrind error. Both builds must
 * create the same world (fields the 0.1 structs lack take their defaults) and print the
 * same state hash; a size below the first release's, between releases or above this
 * library's is refused with WEFT_STATUS_DESCRIPTOR_SIZE and a message.
 *
 * Usage: older_header <path of samples/drape-33.toml>
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft.h"

#include "check.h"

/* A refused size: WEFT_STATUS_DESCRIPTOR_SIZE and a message containing `needle`. */
static void refused(weft_status got, const char *needle, const char *what, int line) {
  if (got != WEFT_STATUS_DESCRIPTOR_SIZE) {
    fprintf(stderr, "older_header.c:%d: %s returned %u, expected DESCRIPTOR_SIZE\n", line, what,
            (unsigned)got);
    failures++;
  } else if (strstr(weft_last_error(), needle) == NULL) {
    fprintf(stderr, "older_header.c:%d: %s: message without \"%s\": %s\n", line, what, needle,
            weft_last_error());
    failures++;
  }
}
#define REFUSED(call, needle) refused((call), (needle), #call, __LINE__)

#define G 7
static float positions[3 * G * G];
static uint32_t triangles[6 * (G - 1) * (G - 1)];

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: older_header <samples/drape-33.toml>\n");
    return 2;
  }
  for (int j = 0; j < G; j++) {
    for (int i = 0; i < G; i++) {
      float *p = &positions[3 * (j * G + i)];
      p[0] = 0.3f * (float)i / (float)(G - 1) - 0.15f;
      p[1] = 0.3f;
      p[2] = 0.15f - 0.3f * (float)j / (float)(G - 1);
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

  /* Heap blocks of exactly this header's sizes. */
  weft_world_desc *wd = malloc(sizeof *wd);
  weft_cloth_desc *cd = malloc(sizeof *cd);
  weft_collider_desc *kd = malloc(sizeof *kd);
  weft_step_stats *st = malloc(sizeof *st);
  weft_scene_info *info = malloc(sizeof *info);
  if (!wd || !cd || !kd || !st || !info) return 2;
  printf("sizes world %u cloth %u collider %u stats %u scene %u\n", (unsigned)sizeof *wd,
         (unsigned)sizeof *cd, (unsigned)sizeof *kd, (unsigned)sizeof *st,
         (unsigned)sizeof *info);
#ifdef WEFT_VERSION_NUMBER
  if (weft_version_number() < WEFT_VERSION_NUMBER ||
      weft_version_number() / 1000000 != WEFT_VERSION_MAJOR) {
    fprintf(stderr, "library %u, header %u\n", weft_version_number(), WEFT_VERSION_NUMBER);
    failures++;
  }
#endif

  CHECK(weft_world_desc_default(wd));
  wd->substeps = 2;
  wd->worker_threads = 1;
  weft_world *w = NULL;
  CHECK(weft_world_create(wd, &w));

  CHECK(weft_cloth_desc_default(cd));
  if (cd->size != sizeof *cd) {
    fprintf(stderr, "weft_cloth_desc_default set size %u, sizeof is %u\n", cd->size,
            (unsigned)sizeof *cd);
    failures++;
  }
  cd->vertex_count = G * G;
  cd->positions = positions;
  cd->triangle_count = 2 * (G - 1) * (G - 1);
  cd->triangles = triangles;
  cd->name = "sheet";
  cd->collision.self_collision = 1;
  weft_cloth cloth;
  CHECK(weft_cloth_create(w, cd, &cloth));

  CHECK(weft_collider_desc_default(kd));
  kd->shape = WEFT_SHAPE_SPHERE;
  kd->radius = 0.1f;
  weft_collider ball;
  CHECK(weft_collider_create(w, kd, &ball));

  memset(st, 0, sizeof *st);
  st->size = sizeof *st;
  for (int f = 0; f < 20; f++) CHECK(weft_world_step(w, 1.0f / 60.0f, st));
  if (st->size != sizeof *st || st->substeps == 0) {
    fprintf(stderr, "step stats: size %u, substeps %u\n", st->size, st->substeps);
    failures++;
  }
  uint64_t hash = 0;
  CHECK(weft_world_state_hash(w, &hash));

  /* Sizes no header of this major version gives, refused before anything changes. */
  weft_cloth none;
  uint32_t own = cd->size;
  const uint32_t small = 8, large = own + 64;
  cd->size = small;
  REFUSED(weft_cloth_create(w, cd, &none), "below");
  cd->size = own - 4;
  REFUSED(weft_cloth_create(w, cd, &none), "weft_cloth_desc.size is");
  cd->size = large;
  REFUSED(weft_cloth_create(w, cd, &none), "newer");
  cd->size = 0;
  REFUSED(weft_cloth_create(w, cd, &none), "sizeof(weft_cloth_desc)");
  cd->size = own;
  kd->size = small;
  REFUSED(weft_collider_create(w, kd, (weft_collider *)&none), "below");
  kd->size = (uint32_t)sizeof *kd + 64;
  REFUSED(weft_collider_create(w, kd, (weft_collider *)&none), "newer");
  weft_world *never = NULL;
  wd->size = small;
  REFUSED(weft_world_create(wd, &never), "below");
  wd->size = (uint32_t)sizeof *wd + 64;
  REFUSED(weft_world_create(wd, &never), "newer");
  st->size = small;
  REFUSED(weft_world_step(w, 1.0f / 60.0f, st), "below");
  st->size = (uint32_t)sizeof *st + 64;
  REFUSED(weft_world_step(w, 1.0f / 60.0f, st), "newer");
  uint64_t after = 0;
  CHECK(weft_world_state_hash(w, &after));
  if (after != hash) {
    fprintf(stderr, "a refused call changed the world\n");
    failures++;
  }
  CHECK(weft_world_destroy(w));

  /* A scene, its info in this header's struct. */
  info->size = sizeof *info;
  weft_world *scene = NULL;
  CHECK(weft_scene_load(argv[1], 1, &scene, info));
  if (info->cloth_count != 1 || info->frames == 0) {
    fprintf(stderr, "scene info: %u cloths, %u frames\n", info->cloth_count, info->frames);
    failures++;
  }
  CHECK(weft_world_destroy(scene));
  info->size = (uint32_t)sizeof *info + 64;
  REFUSED(weft_scene_load(argv[1], 1, &scene, info), "newer");

  free(wd);
  free(cd);
  free(kd);
  free(st);
  free(info);
  printf("state_hash %016llx\n", (unsigned long long)hash);
  if (failures != 0) {
    fprintf(stderr, "older_header: %d checks failed\n", failures);
    return 1;
  }
  printf("older_header: all checks passed\n");
  return 0;
}
