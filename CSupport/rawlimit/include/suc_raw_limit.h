/* suc_raw_limit.h — the machine's raw limit for the cache's hot paths (benchmarks only). */
#ifndef SUC_RAW_LIMIT_H
#define SUC_RAW_LIMIT_H
int suc_raw_limit_placeholder(void);
#endif
