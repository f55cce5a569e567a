import Prometheus

extension StatisticsReport {
    /// The report in Prometheus' text exposition format: what `urlcache stats --prometheus`
    /// writes (a textfile for node_exporter's textfile collector, refreshed from cron) and the
    /// directory part of the proxy's `/metrics`, so both name every figure the same way.
    ///
    /// Every sample carries a `directory` label. The "ever" counters (hits, misses, stores,
    /// evictions, corrupt purges) are kept in the index and shared by every process, so they are
    /// exported as counters; sizes are gauges. Per-partition gauges come from the counters the
    /// index keeps per partition (no walk), so every scrape has them.
    package func prometheusText() -> String {
        let registry = PrometheusCollectorRegistry()
        let directoryLabel = ("directory", directory)
        func counter(_ name: String, _ value: Int, _ help: String) {
            let descriptor = MetricNameDescriptor(
                namespace: "urlcache", metricName: name, unitName: "total", helpText: help)
            registry.makeCounter(descriptor: descriptor, labels: [directoryLabel]).increment(by: Int64(value))
        }
        func gauge(_ name: String, _ value: Int, _ help: String, _ labels: [(String, String)] = []) {
            // The unit is part of each name here (`_bytes`, `_files`), as Prometheus' naming asks.
            let descriptor = MetricNameDescriptor(namespace: "urlcache", metricName: name, unitName: "", helpText: help)
            registry.makeGauge(descriptor: descriptor, labels: [directoryLabel] + labels).set(Int64(value))
        }
        counter("hits", hits, "Lookups answered, by every process (each reports with its next write).")
        counter("misses", misses, "Lookups not answered, by every process (each reports with its next write).")
        counter("stores", stores, "Entries stored by every process.")
        counter("evictions", evictions, "Entries removed by compaction or the hard cap.")
        counter("corrupt_purges", corruptPurges, "Entries purged because their data failed a check.")
        gauge("entries", entries, "Entries in the directory (each Vary variant counts one).")
        gauge("body_bytes", bodyBytes, "Logical (uncompressed) body bytes of the entries.")
        gauge("stored_bytes", storedBytes, "Body bytes as stored (compressed or raw, inline bodies included).")
        gauge("entry_disk_bytes", diskEntryBytes, "Bytes the live entries take on disk: what the capacity holds.")
        let diskHelp = "Bytes the directory takes on disk as du counts them, by part."
        for (part, bytes) in [
            ("index", diskIndexBytes), ("body_files", diskBodyFileBytes), ("leftovers", diskLeftoverBytes),
            ("overhead", diskOverheadBytes),
        ] {
            gauge("disk_bytes", bytes, diskHelp, [("part", part)])
        }
        gauge("leftover_files", diskLeftoverFiles, "Temp files, orphans and retired index generations.")
        gauge("index_map_bytes", indexMapBytes, "Size of the index map.")
        gauge("index_used_bytes", indexUsedBytes, "Bytes of the index map in use.")
        gauge("reader_slots_used", readerSlotsUsed, "Index reader slots in use across every process.")
        gauge("reader_slots", readerSlotsMax, "Index reader slots.")
        if let fileSystem {
            gauge(
                "filesystem_available_bytes", fileSystem.availableBytes, "Bytes the cache's file system can still take."
            )
        }
        for partition in partitions {
            let label = [("partition", partition.name)]
            gauge("partition_entries", partition.entries, "Entries of the partition.", label)
            gauge("partition_body_bytes", partition.bodyBytes, "Logical body bytes of the partition.", label)
            gauge("partition_stored_bytes", partition.storedBytes, "Body bytes of the partition as stored.", label)
            gauge(
                "partition_disk_bytes", partition.diskBytes,
                "Bytes the partition's entries take on disk (records + body files): what its quota holds.", label)
            if let quota = partition.quotaBytes {
                gauge("partition_quota_bytes", quota, "The partition's byte quota.", label)
            }
        }
        gauge(
            "partition_counters_exact", partitionCountersExact ? 1 : 0,
            "1 when the partitions' counters add up to the directory's (0: an earlier release changed entries; verify --fix)."
        )
        return registry.emitToString()
    }
}
