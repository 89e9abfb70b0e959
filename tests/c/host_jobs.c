/* host_jobs.c — an engine runs weft's parallel work on its own job system
 * (weft_world_set_task_dispatcher), here a small pool of pthreads; tests/c_abi.rs builds it
 * with -Wall -Wextra -Werror and runs it under valgrind.
 *
 * - The scene (argv[1], several cloths) stepped `frames` frames (argv[2]) on weft's own
 *   workers and on the host's pool gives the same state hash, printed as
 *   "state_hash <hex>" (the harness compares it with `weft run`'s);
 * - a dispatcher that skips a task makes the step fail with WEFT_STATUS_THREADS and
 *   leaves the world's state as it was, a pending pin target still pending;
 * - a NULL dispatcher hands the steps back to weft's own workers.
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "weft.h"

#include "check.h"

/* ---- the host's job system: WORKERS threads and the caller share each batch ---- */

#define WORKERS 3

typedef struct {
  pthread_mutex_t lock;
  pthread_cond_t work;  /* a batch was posted, or quit */
  pthread_cond_t done;  /* the batch's last task finished */
  pthread_t threads[WORKERS];
  int quit;
  unsigned long batch;  /* batches posted so far */
  /* the batch in flight */
  weft_task_run run;
  void *task_data;
  uint32_t count, next, finished;
  unsigned long tasks_run; /* over the pool's life */
} job_pool;

/* Takes and runs the batch's tasks until none is left; called with the lock held. */
static void drain(job_pool *p) {
  while (p->next < p->count) {
    uint32_t i = p->next++;
    weft_task_run run = p->run;
    void *data = p->task_data;
    pthread_mutex_unlock(&p->lock);
    run(data, i); /* weft's task: calls nothing of the host */
    pthread_mutex_lock(&p->lock);
    p->tasks_run++;
    if (++p->finished == p->count) pthread_cond_broadcast(&p->done);
  }
}

static void *worker(void *arg) {
  job_pool *p = arg;
  unsigned long seen = 0;
  pthread_mutex_lock(&p->lock);
  for (;;) {
    while (!p->quit && p->batch == seen) pthread_cond_wait(&p->work, &p->lock);
    if (p->quit) break;
    seen = p->batch;
    drain(p);
  }
  pthread_mutex_unlock(&p->lock);
  return NULL;
}

/* weft_task_dispatch: post the batch, help run it, wait for every task. */
static void dispatch(void *user, uint32_t task_count, weft_task_run run, void *task_data) {
  job_pool *p = user;
  pthread_mutex_lock(&p->lock);
  p->run = run;
  p->task_data = task_data;
  p->count = task_count;
  p->next = 0;
  p->finished = 0;
  p->batch++;
  pthread_cond_broadcast(&p->work);
  drain(p);
  while (p->finished < p->count) pthread_cond_wait(&p->done, &p->lock);
  pthread_mutex_unlock(&p->lock);
}

static void pool_start(job_pool *p) {
  pthread_mutex_init(&p->lock, NULL);
  pthread_cond_init(&p->work, NULL);
  pthread_cond_init(&p->done, NULL);
  p->quit = 0;
  p->batch = 0;
  p->count = p->next = p->finished = 0;
  p->tasks_run = 0;
  for (int k = 0; k < WORKERS; k++) pthread_create(&p->threads[k], NULL, worker, p);
}

static void pool_stop(job_pool *p) {
  pthread_mutex_lock(&p->lock);
  p->quit = 1;
  pthread_cond_broadcast(&p->work);
  pthread_mutex_unlock(&p->lock);
  for (int k = 0; k < WORKERS; k++) pthread_join(p->threads[k], NULL);
  pthread_cond_destroy(&p->done);
  pthread_cond_destroy(&p->work);
  pthread_mutex_destroy(&p->lock);
}

/* A broken dispatcher: runs every task but the first. */
static void skip_first(void *user, uint32_t task_count, weft_task_run run, void *task_data) {
  (void)user;
  for (uint32_t i = 1; i < task_count; i++) run(task_data, i);
}

/* ---- the checks ---- */

static weft_world *load(const char *path, uint32_t threads, weft_scene_info *info) {
  weft_world *w = NULL;
  info->size = sizeof *info;
  CHECK(weft_scene_load(path, threads, &w, info));
  return w;
}

static uint64_t hash_of(const weft_world *w) {
  uint64_t h = 0;
  CHECK(weft_world_state_hash(w, &h));
  return h;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: host_jobs SCENE.toml FRAMES\n");
    return 2;
  }
  const char *path = argv[1];
  int frames = atoi(argv[2]);
  if (frames < 1) {
    fprintf(stderr, "host_jobs: frames must be positive\n");
    return 2;
  }
  weft_scene_info info;
  weft_step_stats stats = {0};
  stats.size = sizeof stats;

  /* weft's own two workers */
  weft_world *own = load(path, 2, &info);
  float dt = 1.0f / info.fps;
  EXPECT_TRUE(info.cloth_count >= 2, "the scene has %u cloths", (unsigned)info.cloth_count);
  for (int f = 0; f < frames; f++) CHECK(weft_world_step(own, dt, &stats));
  uint64_t own_hash = hash_of(own);

  /* the host's pool */
  job_pool pool;
  pool_start(&pool);
  weft_world *host = load(path, 2, &info);
  CHECK(weft_world_set_task_dispatcher(host, dispatch, &pool));
  for (int f = 0; f < frames; f++) CHECK(weft_world_step(host, dt, &stats));
  uint64_t host_hash = hash_of(host);
  EXPECT_TRUE(host_hash == own_hash, "host %016" PRIx64 ", own %016" PRIx64, host_hash,
              own_hash);
  EXPECT_TRUE(pool.tasks_run >= (unsigned long)frames, "%lu tasks ran", pool.tasks_run);

  /* a dispatcher that skips a task: refused, the state as it was */
  CHECK(weft_world_set_task_dispatcher(host, skip_first, NULL));
  weft_status s = weft_world_step(host, dt, &stats);
  EXPECT_TRUE(s == WEFT_STATUS_THREADS, "a skipped task gives status %u", (unsigned)s);
  EXPECT_TRUE(hash_of(host) == host_hash, "the failed step changed the state");

  /* NULL: back to weft's own workers, one more frame on both worlds */
  CHECK(weft_world_set_task_dispatcher(host, NULL, NULL));
  CHECK(weft_world_step(host, dt, &stats));
  CHECK(weft_world_step(own, dt, &stats));
  EXPECT_TRUE(hash_of(host) == hash_of(own), "after the NULL dispatcher the worlds differ");

  /* the host's pool again, for the printed frames' hash */
  CHECK(weft_world_set_task_dispatcher(host, dispatch, &pool));
  CHECK(weft_world_step(host, dt, &stats));
  CHECK(weft_world_step(own, dt, &stats));
  EXPECT_TRUE(hash_of(host) == hash_of(own), "the host's pool again: the worlds differ");
  EXPECT_TRUE(weft_world_set_task_dispatcher(NULL, dispatch, &pool) ==
                  WEFT_STATUS_NULL_ARGUMENT,
              "a NULL world is refused");

  printf("state_hash %016" PRIx64 "\n", hash_of(host));

  /* a pending pin target survives a failed step: both worlds get the same target, the host's
     first step fails, and its retry matches the own world's step */
  weft_world *worlds[2] = {host, own};
  for (int w = 0; w < 2; w++) {
    weft_cloth cloths[16];
    uint32_t count = 0;
    CHECK(weft_world_cloths(worlds[w], cloths, 16, &count));
    weft_cloth cloth = cloths[0];
    uint32_t n = 0;
    CHECK(weft_cloth_vertex_count(worlds[w], cloth, &n));
    float *x = malloc(3 * (size_t)n * sizeof *x);
    EXPECT_TRUE(x != NULL, "out of memory");
    if (!x) return 1;
    CHECK(weft_cloth_copy_positions(worlds[w], cloth, x, n));
    uint32_t vertex = 0;
    float target[3] = {x[0], x[1] + 0.01f, x[2]};
    CHECK(weft_cloth_set_pins(worlds[w], cloth, &vertex, target, 1));
    free(x);
  }
  uint64_t before = hash_of(host);
  CHECK(weft_world_set_task_dispatcher(host, skip_first, NULL));
  s = weft_world_step(host, dt, &stats);
  EXPECT_TRUE(s == WEFT_STATUS_THREADS, "a skipped task gives status %u", (unsigned)s);
  EXPECT_TRUE(hash_of(host) == before, "the failed step with a pin target changed the state");
  CHECK(weft_world_set_task_dispatcher(host, NULL, NULL));
  CHECK(weft_world_step(host, dt, &stats));
  CHECK(weft_world_step(own, dt, &stats));
  EXPECT_TRUE(hash_of(host) == hash_of(own),
              "the pin target pending at a failed step was lost: the worlds differ");

  CHECK(weft_world_destroy(host));
  CHECK(weft_world_destroy(own));
  pool_stop(&pool);
  if (failures) {
    fprintf(stderr, "host_jobs: %d checks failed\n", failures);
    return 1;
  }
  printf("host_jobs: all checks passed\n");
  return 0;
}
