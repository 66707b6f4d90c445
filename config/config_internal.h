/* config internals: shared by config.c, log.c and tests/unit only; other modules use
 * config/config.h. None of these is for use while other threads run tcfuse code.
 */
#ifndef TCF_CONFIG_INTERNAL_H
#define TCF_CONFIG_INTERNAL_H

/* 1 once tcf_cfg holds the environment's values (acquire ordering), else 0. tcf_log reads
 * tcf_cfg only then: it may be called from inside tcf_config_load, which must not wait
 * on itself. */
int tcf_config_is_loaded(void);

/* Tests only: restores the defaults and reads the environment again, now, as a fresh
 * process would (warnings and TCFUSE_PRINT_CONFIG included); also calls tcf_log_reset.
 * tcf_config_load stays once-only: this bypasses it. Not thread-safe. */
void tcf_config_reload(void);

/* Closes the log file (if one is open) and resets tcf_log's line cap; the next message
 * picks its destination again. Not thread-safe. */
void tcf_log_reset(void);

#endif
