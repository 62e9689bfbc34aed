"""The answering spans of the relevance set's questions (benchmarks/relevance_set.QUESTIONS), for the agent harness.

relevance_set gives each question a loose answering-text pattern (r"crontab|cron") that test_relevance_bench
keeps. Here each question has the span an agent could quote as the answer: the sentence, command or code
line that answers it, written by reading the answering files in the corpus (the Debian packages' HTML, text
and PDF, /tmp/mcp-nextcloud-relevance/corpus/docs), never from what the product returns. Where a page exists
in en-US, fr-FR and de-DE (the Debian Administrator's Handbook, the Securing Debian Manual, the maint-guide),
the span is a command or code line common to the three, or the three translations of the sentence.

Spans are matched on text with its whitespace collapsed to single spaces and typographic apostrophes made
plain (`normalize`), so a sentence across a line break still matches.

`key` is the term the scripted agent gives files_read's find when the first answer's passage and the text
around the hit did not answer: the question's own most specific word or the identifier it names (what an
agent types without knowing the documents), in the question's language.
"""
from __future__ import annotations

import re

# question -> (answering span, the question's key term)
SPANS: dict[str, tuple[str, str]] = {
    "how do I limit the memory a process can use": (
        r"maximum area \(in bytes\) of address space|\* hard rss \d+", "memory"),
    "comment limiter la mémoire qu'un programme peut utiliser": (
        r"maximum area \(in bytes\) of address space|\* hard rss \d+", "mémoire"),
    "how do I sign a package I upload": (
        r"debsign (signs|signiert|signe|command|\S+\.changes|on your|für Ihre|sur le fichier)|(commande|Befehl) debsign"
        r"|DEBSIGN_KEYID",
        "sign"),
    "Wohin gehören die Konfigurationsdateien eines Programms im Dateisystem?": (
        r"/etc/? ?: (configuration files|Konfigurationsdateien|fichiers de configuration)"
        r"|/etc hierarchy contains configuration files"
        r"|configuration files created or used by your package must reside in /etc", "Konfigurationsdateien"),
    "comment exécuter plusieurs processus en parallèle avec Python": (
        r"with (multiprocessing\.)?Pool\(\d*\) as p|Process\(target=|ProcessPoolExecutor\(\) as executor"
        r"|monitor multiple subprocesses in parallel", "parallèle"),
    "Wie ersetze ich Text mit einem regulären Ausdruck in Python?": (
        r"re\.sub\(pattern, repl, string|Return the string obtained by replacing the leftmost"
        r"|The sub\(\) method takes a replacement value|p\.sub\('colour'", "Ausdruck"),
    "Wie ändere ich die Tastaturbelegung der Konsole?": (
        r"dpkg-reconfigure keyboard-configuration", "Tastaturbelegung"),
    "comment protéger un serveur avec un pare-feu qui filtre les paquets": (
        r"nft (add (rule|chain|table)|-f \S)|iptables -[AIP] \w", "pare-feu"),
    "which fields must the control file of a source package contain": (
        r"The fields in the general (stanza|paragraph)|Source \(mandatory\) (\* )?Maintainer \(mandatory\)"
        r"|\bSource: gentoo (\d+ )?Section:", "control file"),
    "Wie lese ich eine Datei im JSON-Format mit Python ein?": (
        r"json\.load\(fp|Deserialize fp", "JSON"),
    "how do I schedule a command to run every night": (
        r"crontab -e|@daily|\d{1,2} \d{1,2} \* \* \* \$HOME"
        r"|(programs in|programmes du répertoire|Programme in) /etc/cron\.daily/", "schedule"),
    "comment planifier une tâche qui s'exécute chaque jour": (
        r"crontab -e|@daily|\d{1,2} \d{1,2} \* \* \* \$HOME"
        r"|(programs in|programmes du répertoire|Programme in) /etc/cron\.daily/", "planifier"),
    "Wie richte ich einen Windows-Dateiserver mit Samba ein?": (
        r"dpkg-reconfigure samba-common|workgroup = FALCOTNET|smbpasswd -a", "Samba"),
    "how to share files with Windows machines on the network": (
        r"dpkg-reconfigure samba-common|workgroup = FALCOTNET|smbpasswd -a", "Windows"),
    "comment trier une liste en Python": (
        r"built-in list\.sort\(\) method|sorted\(iterable, /, \*, key=None, reverse=False\)"
        r"|Return a new sorted list|Sort the items of the list in place|This method sorts the list in place",
        "trier"),
    "Wie schreibe ich Unit-Tests in Python?": (
        r"subclassing unittest\.TestCase|class \w+\(unittest\.TestCase\)", "Unit-Tests"),
    "how do I parse command line arguments in Python": (
        r"= argparse\.ArgumentParser\(|getopt\.getopt\(args|= OptionParser\(", "arguments"),
    "comment lire et écrire des fichiers CSV en Python": (
        r"csv\.(reader|writer|DictReader|DictWriter)\(csvfile", "CSV"),
    "Wie verbinde ich mich mit einer SQLite-Datenbank in Python?": (
        r"sqlite3\.connect\(['\"]", "SQLite"),
    "what is the difference between a tuple and a list": (
        r"Why are there separate tuple and list data types|Lists and tuples, while similar"
        r"|tuples may seem similar to lists|Tuples are immutable", "tuple"),
    "comment configurer une adresse IPv6": (
        r"iface \w+ inet6 (static|auto|dhcp)", "IPv6"),
    "Wie überwache ich die Integrität der Systemdateien?": (
        r"AIDE \(Advanced Intrusion Detection Environment\)|\baideinit\b|debsums -p|dpkg --verify \("
        r"|such as aide, integrit or samhain|wie z\.B\. aide, integrit und samhain|comme aide, integrit ou samhain",
        "Integrität"),
    "how to restrict which users can log in on the console": (
        r"/etc/securetty|pam_securetty\.so|pam_access\.so|/etc/security/access\.conf", "console"),
    "comment créer une archive tar compressée en Python": (
        r"tarfile\.open\(\"[^\"]+\", \"w:(gz|bz2|xz)\"\)|shutil\.make_archive\(base_name, format", "tar"),
    "Wie erstelle ich ein Debian-Paket aus den Quellen?": (
        r"dpkg-buildpackage -(us|B|b|rfakeroot)\b|\$ debuild\b", "Debian-Paket"),
    "how do I get the current date and time in Python": (
        r"datetime\.now\(tz=None\)|Return the current local date and time"
        r"|Return the time in seconds since the epoch as a floating point number", "current date"),
    "que faire si un serveur a été compromis": (
        r"Unplugging the computer from the network|Débrancher l'ordinateur du réseau|Rechner vom Netz genommen wird"
        r"|remove the machine from the network by unplugging|débrancher simplement la machine du réseau"
        r"|Rechner vom Netzwerk zu trennen|should not be brought back on line without a complete reinstallation"
        r"|réinstallation complète apportera|ohne eine vollständige Neuinstallation nicht wieder ans Netz",
        "compromis"),
    "Wie konfiguriere ich einen DHCP-Server?": (
        r"/etc/dhcp/dhcpd\.conf|subnet \d+\.\d+\.\d+\.\d+ netmask", "DHCP"),
    "how do I set disk quotas for users": (
        r"\bedquota\b|usrquota|\bquotacheck\b", "quotas"),
    "comment envoyer un courriel avec Python": (
        r"smtplib\.SMTP\(['\"]|\.send_message\(msg\)", "courriel"),
    "Wie mache ich eine Sicherungskopie meiner Daten?": (
        r"Datensicherung mit rsync|Der Befehl rsync \(aus dem gleichnamigen Paket\)|\bdirvish\b|rsync -aHAXSv",
        "Sicherungskopie"),
    "Wie erzeuge ich in Python kryptografisch sichere Zufallszahlen?": (
        r"secrets\.token_bytes\(|token_bytes\(\[nbytes=None\]\)|os\.urandom\(size\)"
        r"|random bytes suitable for cryptographic use|class random\.SystemRandom", "Zufallszahlen"),
    "comment analyser les arguments de la ligne de commande en Python": (
        r"= argparse\.ArgumentParser\(|getopt\.getopt\(args|= OptionParser\("
        r"|list of command line arguments passed to a Python script", "arguments"),
    "Wie starte ich ein externes Programm aus Python und lese seine Ausgabe?": (
        r"subprocess\.run\(\[|capture_output=True|subprocess\.check_output\(|create_subprocess_exec\(", "Programm"),
    "comment mesurer le temps d'exécution d'un petit bout de code Python": (
        r"python -m timeit|timeit\.timeit\(|timeit\.Timer\(", "temps d'exécution"),
    "Wie lese ich Umgebungsvariablen in Python aus?": (
        r"os\.getenv\(key, default=None\)|mapping object where keys and values are strings that represent the"
        r" process environment", "Umgebungsvariablen"),
    "comment compresser des données en Python": (
        r"(zlib|gzip|bz2|lzma)\.compress\(data|gzip\.open\('[^']+', 'wb'\)", "compresser"),
    "Wie kopiere ich in Python eine Datei in ein anderes Verzeichnis?": (
        r"shutil\.copy2?\(src, dst|Copies the file src to the file or directory dst", "kopiere"),
    "comment télécharger une page web en Python": (
        r"urllib\.request\.urlopen\(['\"]http|urlopen\(url, data=None", "télécharger"),
    "Wie schreibe ich einen eigenen Kontextmanager für die with-Anweisung?": (
        r"@contextmanager|@contextlib\.contextmanager|object\.__enter__\(self\)", "Kontextmanager"),
    "Wie erzeuge ich in Node.js kryptografisch sichere Zufallsbytes?": (
        r"secrets\.token_bytes\(|token_bytes\(\[nbytes=None\]\)|os\.urandom\(size\)"
        r"|random bytes suitable for cryptographic use", "Zufallsbytes"),
}

_SPACE = re.compile(r"\s+")


def normalize(text: str) -> str:
    """Whitespace collapsed to single spaces, typographic apostrophes made plain: what spans are matched on."""
    return _SPACE.sub(" ", text.replace("\u2019", "'").replace("\u00ad", ""))


def span(question: str) -> re.Pattern[str]:
    return re.compile(SPANS[question][0])


def key_term(question: str) -> str:
    return SPANS[question][1]
