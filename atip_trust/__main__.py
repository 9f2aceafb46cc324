from atip_trust.cli.main import main

raise SystemExit(main())
