import ArgumentParser
import CacheMaintenance
import SharedURLCacheStore

extension EvictionPolicy: ExpressibleByArgument {}

struct Eviction: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "eviction",
        abstract: "Choose (or print) the directory's eviction policy: lru (the default) or s3fifo.",
        discussion: """
            The policy is recorded in the directory, so every process sharing it evicts by it from \
            its next eviction: at the capacity and in `urlcache compact`. Partition quotas evict \
            least recently used under both. s3fifo keeps new keys in a small probationary queue, so \
            a scan of one-time URLs evicts them rather than the entries that are hit, and a hit \
            writes nothing once the entry's use counter is full. Choosing a policy keeps every \
            entry. Without --policy, prints the current one.

            Example: urlcache eviction /var/cache/api --policy s3fifo
            """)

    @OptionGroup var options: CacheDirectoryOptions
    @Option(help: "The policy to choose: lru or s3fifo.") var policy: EvictionPolicy?
    @OptionGroup var output: OutputOptions

    func run() throws {
        output.emit(try CacheMaintainer(directory: options.resolved).setEvictionPolicy(policy))
    }
}
