import ArgumentParser

/// `urlcache`: the operators' command line for a SharedURLCache directory.
@main
struct URLCacheCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "urlcache",
        abstract: "Operate a SharedURLCache directory shared by several processes.",
        subcommands: [Demo.self, DemoWorker.self, Stats.self]
    )
}
