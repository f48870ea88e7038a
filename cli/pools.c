/* The "inside pools" table (contract in cli/pools.h). */
#include "cli/pools.h"

#include <stdio.h>

#include "cli/sites.h"
#include "cli/snapview.h"
#include "common/cs_format.h"

enum { CS_POOLS_TOP_SITES = 3 };

/* The active blocks of the device's segments inside [lo, hi), by site. */
static int cs_pools_sites(const cJSON *root, int device, int64_t lo, int64_t hi, cs_sites_t *sites) {
  cs_view_device_blocks_t it;
  cs_view_block_t b;
  for (cs_view_device_blocks_begin(&it, root, device); cs_view_device_blocks_next(&it, &b);) {
    if (b.state != CS_VIEW_ALLOCATED || b.addr < lo || b.addr >= hi) continue;
    cs_site_t site = cs_site_of(b.frames);
    if (cs_sites_add(sites, &site, (uint64_t)b.requested) != 0) return -1;
  }
  return 0;
}

int cs_pools_summary(const cJSON *root, int device) {
  const cJSON *cudasnap = cJSON_GetObjectItemCaseSensitive(root, "cudasnap");
  const cJSON *pools = cJSON_IsObject(cudasnap) ? cJSON_GetObjectItemCaseSensitive(cudasnap, "pools") : NULL;
  bool header = false;
  const cJSON *pool;
  cJSON_ArrayForEach(pool, pools) {
    int64_t dev, addr, size, registered, regions;
    if (!cs_view_int(pool, "device", &dev) || dev != device || !cs_view_int(pool, "address", &addr) ||
        !cs_view_int(pool, "size", &size) || !cs_view_int(pool, "registered_bytes", &registered) ||
        !cs_view_int(pool, "regions", &regions) || size < 0 || registered < 0 || regions < 0)
      continue;
    if (!header) printf("inside pools (NVTX):\n");
    header = true;
    char total[64], reg[64];
    cs_format_bytes((uint64_t)size, total, sizeof total);
    cs_format_bytes((uint64_t)registered, reg, sizeof reg);
    printf("  pool 0x%llx (%s): %s registered in %lld region%s%s\n", (unsigned long long)addr, total, reg,
           (long long)regions, regions == 1 ? "" : "s", regions > 0 ? "; top region sites:" : "");
    cs_sites_t sites;
    cs_sites_init(&sites);
    if (cs_pools_sites(root, device, addr, addr + size, &sites) != 0) {
      cs_sites_free(&sites);
      return -1;
    }
    cs_sites_sort(&sites);
    for (size_t i = 0; regions > 0 && i < sites.count && i < CS_POOLS_TOP_SITES; i++) {
      char bytes[64], site[1024];
      cs_format_bytes(sites.totals[i].bytes, bytes, sizeof bytes);
      cs_site_format(&sites.totals[i].site, site, sizeof site);
      printf("    %s in %llu block%s: %s\n", bytes, (unsigned long long)sites.totals[i].blocks,
             cs_plural(sites.totals[i].blocks), site);
    }
    cs_sites_free(&sites);
  }
  return 0;
}
