import OCDKit
#if PostgreSQL
import OCDPostgreSQL

// Built with the package's PostgreSQL trait: postgres:// URLs open as stores.
OCDPostgreSQL.install()
#endif

await OCD.runAsMain()
