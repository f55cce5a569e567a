import ArgumentParser
import CacheMaintenance

struct Quota: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Set or remove a partition's byte quota, which every process sharing the directory obeys.",
        discussion: """
            A store that would take the partition over its quota first evicts that partition's own \
            least recently used entries, never another partition's, so one noisy service cannot \
            evict the others. Bytes are counted as the capacity counts them (records + body files \
            in whole 4 KiB blocks). Setting a quota walks the entries once and evicts down to it; \
            `urlcache compact` holds every partition to its quota too. `urlcache stats` lists them.

            Example: urlcache quota /var/cache/api --partition images --max-size 1GiB
            """)

    @OptionGroup var options: CacheDirectoryOptions
    @Option(help: "The partition, as urlcache stats names it ('' for the default one, hex:… when not UTF-8).")
    var partition: String
    @Option(help: "The quota: 1GiB, 500MB, bytes.", transform: { try SizeLimit($0) }) var maxSize: SizeLimit?
    @Flag(help: "Remove the partition's quota.") var remove = false
    @Flag(help: "Set the quota although the partition has no entries yet.") var newPartition = false
    @OptionGroup var output: OutputOptions

    func validate() throws {
        if (maxSize == nil) == !remove { throw ValidationError("say --max-size SIZE or --remove") }
    }

    func run() throws {
        let summary = try CacheMaintainer(directory: options.resolved).setQuota(
            partition: partition, maxSize: remove ? nil : maxSize, allowNewPartition: newPartition)
        output.emit(summary)
    }
}
