import ArgumentParser
import CacheMaintenance

struct URLOrder: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "url-order",
        abstract:
            "Keep (or stop keeping) the index's URL order, which `urlcache purge --prefix` reads instead of walking.",
        discussion: """
            With the URL order kept, every store also writes its URL into an ordered index table, \
            so a purge by prefix reads the entries under the prefix only, whatever the size of the \
            directory. It costs one index key per stored URL (about the URL's length plus 20 bytes, \
            more with B-tree slack) and a little more work per store, so it is off until asked for. \
            --on walks the index once to build it; every process obeys from its next store. \
            Without options, prints whether it is kept.

            Example: urlcache url-order /var/cache/api --on
            """)

    @OptionGroup var options: CacheDirectoryOptions
    @Flag(help: "Start keeping the URL order (walks the index once).") var on = false
    @Flag(help: "Stop keeping it and drop what was kept.") var off = false
    @OptionGroup var output: OutputOptions

    func validate() throws {
        if on && off { throw ValidationError("say --on or --off, not both") }
    }

    func run() throws {
        let summary = try CacheMaintainer(directory: options.resolved).setURLOrder(kept: on ? true : off ? false : nil)
        output.emit(summary)
    }
}
