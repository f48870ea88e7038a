/* SPDX-License-Identifier: Apache-2.0 */
/* The "inside pools" table (contract in analysis/pools_summary.h). */
#include "analysis/pools_summary.h"

#include <stdio.h>

#include "analysis/sites.h"
#include "analysis/snapview.h"
#include "common/cs_format.h"

enum { CS_POOLS_TOP_SITES = 3 };

/* The active blocks of the device's segments inside [lo, hi), by site. */
static int cs_pools_sites(cs_site_cache_t *cache, int device, int64_t lo, int64_t hi, cs_sites_t *sites) {
  cs_view_device_blocks_t it;
  cs_view_block_t b;
  for (cs_view_device_blocks_begin(&it, cache->doc, device); cs_view_device_blocks_next(&it, &b);) {
    if (b.state != CS_VIEW_ALLOCATED || b.addr < lo || b.addr >= hi) continue;
    cs_site_t site = cs_site_cache_of(cache, b.frames);
    if (cs_sites_add(sites, &site, (uint64_t)b.requested) != 0) return -1;
  }
  return 0;
}

int cs_pools_summary(const cs_doc_t *doc, int device) {
  cs_val_t cudasnap = cs_doc_get_key(doc, cs_doc_root(doc), CS_KEY_CUDASNAP);
  cs_val_t pools = cs_doc_get(doc, cudasnap, "pools");
  bool header = false;
  cs_site_cache_t cache;
  cs_site_cache_init(&cache, doc);
  /* Whatever container `pools` is: a dict's members are walked as its items, as they always were. */
  size_t npools = cs_doc_len(doc, pools);
  const cs_val_t *pool_items = cs_doc_items(doc, pools);
  for (size_t p = 0; p < npools; p++) {
    cs_val_t pool = pool_items[p];
    int64_t dev, addr, size, registered, regions;
    if (!cs_view_int_key(doc, pool, CS_KEY_DEVICE, &dev) || dev != device ||
        !cs_view_int_key(doc, pool, CS_KEY_ADDRESS, &addr) || !cs_view_int_key(doc, pool, CS_KEY_SIZE, &size) ||
        !cs_view_int(doc, pool, "registered_bytes", &registered) || !cs_view_int(doc, pool, "regions", &regions) ||
        size < 0 || registered < 0 || regions < 0)
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
    if (cs_pools_sites(&cache, device, addr, addr + size, &sites) != 0) {
      cs_sites_free(&sites);
      cs_site_cache_free(&cache);
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
  cs_site_cache_free(&cache);
  return 0;
}
