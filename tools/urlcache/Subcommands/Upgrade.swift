import ArgumentParser
import CacheMaintenance

struct Upgrade: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "upgrade",
        abstract: "Turn a directory of format 1 into format 2 (one recency order) while services keep using it.",
        discussion: """
            A directory an earlier release created is format 1: it keeps two time orders, and every \
            store writes both. Format 2 keeps one, so a store writes about a quarter fewer index \
            pages; remove-since walks the use order instead. The upgrade runs in short transactions \
            (stores of other processes wait milliseconds at a time) and can be stopped and run again. \
            Every process of this release follows from its next write; stop every process of an \
            earlier release first, since an earlier release refuses a directory of format 2 and one \
            already running would miss entries in its remove-since. A process of a release before \
            index generations is detected, and the upgrade refuses while it runs (exit 4). A \
            directory of format 2 is left as it is.

            Example: urlcache upgrade /var/cache/api
            """)

    @OptionGroup var options: CacheDirectoryOptions
    @OptionGroup var output: OutputOptions

    func run() throws {
        output.emit(try CacheMaintainer(directory: options.resolved).upgradeFormat())
    }
}
