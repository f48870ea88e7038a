/* SPDX-License-Identifier: Apache-2.0 */
/* The functions that set a signal's disposition, interposed for the signals cudasnap watches
 * (process/signals.h keeps the program's dispositions and says why); any other signal is the real
 * function's. */
#include <signal.h>

#include "common/cs_compiler.h"
#include "process/signals.h"

CS_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  cs_sig_slot_t *s = cs_signals_watched(sig);
  if (!s) return cs_signals_real_sigaction(sig, act, old);
  return cs_signals_set(s, sig, act, old);
}

/* The four signal() variants differ only in the semantics the real one gives a handler. */
static cs_signals_handler_fn cs_signal_hook(cs_signal_variant_t variant, int sig, cs_signals_handler_fn handler) {
  cs_sig_slot_t *s = cs_signals_watched(sig);
  if (!s) return cs_signals_real_signal(variant, sig, handler);
  return cs_signals_set_handler(s, sig, handler, variant);
}

CS_EXPORT cs_signals_handler_fn signal(int sig, cs_signals_handler_fn handler) {
  return cs_signal_hook(CS_SIGNAL_BSD, sig, handler);
}

CS_EXPORT cs_signals_handler_fn bsd_signal(int sig, cs_signals_handler_fn handler) {
  return cs_signal_hook(CS_SIGNAL_BSD_SIGNAL, sig, handler);
}

CS_EXPORT cs_signals_handler_fn sysv_signal(int sig, cs_signals_handler_fn handler) {
  return cs_signal_hook(CS_SIGNAL_SYSV, sig, handler);
}

CS_EXPORT cs_signals_handler_fn __sysv_signal(int sig, cs_signals_handler_fn handler) {
  return cs_signal_hook(CS_SIGNAL_SYSV_INTERNAL, sig, handler);
}
