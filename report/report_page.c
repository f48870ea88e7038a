/* SPDX-License-Identifier: Apache-2.0 */
/* The report's HTML page (contract in report/report_page.h). */
#include "report/report_page.h"

#include <string.h>

#include "report/report_assets.h"

typedef struct cs_page_writer_s {
  cs_sink_t sink;
  int error; /* the first sink failure; nothing more is written after it */
} cs_page_writer_t;

static void cs_page_put(cs_page_writer_t *w, const char *bytes, size_t len) {
  if (w->error == 0 && len > 0) w->error = w->sink.write(w->sink.ctx, bytes, len);
}

/* Text as HTML character data or attribute value. */
static void cs_page_put_text(cs_page_writer_t *w, const char *text) {
  for (const char *p = text; *p != '\0';) {
    size_t plain = strcspn(p, "&<>\"'");
    cs_page_put(w, p, plain);
    p += plain;
    if (*p == '\0') break;
    static const char *const escapes[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&#39;"};
    const char *e = escapes[strchr("&<>\"'", *p) - "&<>\"'"];
    cs_page_put(w, e, strlen(e));
    p++;
  }
}

/* The page's data inside its script element: JSON whose '<', '>' and '&' are \u escapes, so that
 * no name can close the element or open a comment or markup, and U+2028/U+2029 too (line ends for
 * a JavaScript parser older than ES2019). The same JSON to JSON.parse. */
static void cs_page_put_json(cs_page_writer_t *w, const char *data, size_t len) {
  size_t plain = 0;
  for (size_t i = 0; i < len; i++) {
    const unsigned char *c = (const unsigned char *)data + i;
    const char *e = NULL;
    size_t skip = 1;
    if (*c == '<') e = "\\u003c";
    else if (*c == '>') e = "\\u003e";
    else if (*c == '&') e = "\\u0026";
    else if (*c == 0xE2 && i + 2 < len && c[1] == 0x80 && (c[2] == 0xA8 || c[2] == 0xA9)) {
      e = c[2] == 0xA8 ? "\\u2028" : "\\u2029";
      skip = 3;
    }
    if (e == NULL) continue;
    cs_page_put(w, data + plain, i - plain);
    cs_page_put(w, e, 6);
    i += skip - 1;
    plain = i + 1;
  }
  cs_page_put(w, data + plain, len - plain);
}

int cs_report_page(cs_sink_t sink, const char *title, const char *data, size_t len) {
  cs_page_writer_t w = {.sink = sink, .error = 0};
  const char *t = (const char *)cs_report_asset_template, *end = t + cs_report_asset_template_len;
  while (t < end) {
    const char *slot = strstr(t, "{{");
    if (slot == NULL || slot >= end) slot = end;
    cs_page_put(&w, t, (size_t)(slot - t));
    if (slot == end) break;
    const char *close = strstr(slot, "}}");
    size_t name_len = close != NULL ? (size_t)(close - slot - 2) : 0;
    const char *name = slot + 2;
    if (close != NULL && name_len == 5 && memcmp(name, "style", 5) == 0) {
      cs_page_put(&w, (const char *)cs_report_asset_style, cs_report_asset_style_len);
    } else if (close != NULL && name_len == 6 && memcmp(name, "script", 6) == 0) {
      cs_page_put(&w, (const char *)cs_report_asset_script, cs_report_asset_script_len);
    } else if (close != NULL && name_len == 5 && memcmp(name, "title", 5) == 0) {
      cs_page_put_text(&w, title);
    } else if (close != NULL && name_len == 4 && memcmp(name, "data", 4) == 0) {
      cs_page_put_json(&w, data, len);
    } else {
      cs_page_put(&w, slot, 2); /* not a slot: the braces are text */
      t = slot + 2;
      continue;
    }
    t = close + 2;
  }
  return w.error;
}
